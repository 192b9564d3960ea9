package guardrails

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"cel.dev/cel-go/cel"

	"github.com/keenauth/configplans/config"
)

// TestSkippedRulesAreThoseFalseAnyway: a rule skipped for a false
// condition gives what its evaluation would (false: no catch, even where
// the rest would fail), and a condition under || or ! is not one.
func TestSkippedRulesAreThoseFalseAnyway(t *testing.T) {
	role := Change{Kind: "role", Key: "admin", Action: "update", Old: json.RawMessage(`{}`), New: json.RawMessage(`{}`)}
	cases := []struct {
		when      string
		conds     int
		catchRole bool
	}{
		{"change.kind == 'api' && new.nope == 1", 1, false},
		{"new.nope == 1 && 'api' == change.kind", 1, false},
		{"change.kind == 'api' && change.action == 'delete' && environment.name == 'prod'", 3, false},
		{"change.kind == 'api' || change.key == 'admin'", 0, true},
		{"!(change.kind == 'api')", 0, true},
		{"change.kind == 'role' && new.nope == 1", 1, true}, // an error: caught
		{"change.kind != 'api'", 0, true},
	}
	for _, c := range cases {
		comp, bad := compile(c.when)
		if bad != "" {
			t.Fatalf("%s: %s", c.when, bad)
		}
		if len(comp.conds) != c.conds {
			t.Errorf("%s: %d conditions %+v, want %d", c.when, len(comp.conds), comp.conds, c.conds)
		}
		// The full evaluation, without the conditions, agrees.
		full := &Set{rules: []Rule{{Rule: rule("r", c.when), compiled: compiled{fast: wholeProgram(t, c.when), fastUpTo: maxValueSize}}}}
		set, _ := Programs([]config.Rule{rule("r", c.when)})
		for _, s := range []*Set{full, set} {
			got := s.Evaluator(Environment{ID: "env_1", Name: "dev"}).Eval(role)
			if (len(got) == 1) != c.catchRole {
				t.Errorf("%s: caught %v, want %v", c.when, got, c.catchRole)
			}
		}
	}
}

// TestOnlyExpressionsCheapAtAnySizeRunWithoutCostTracking: an expression
// that reads members and compares them cannot reach the limit, whatever
// the spec; one that iterates, or works on a string or a list as a whole,
// can, and keeps the run-time limit.
func TestOnlyExpressionsCheapAtAnySizeRunWithoutCostTracking(t *testing.T) {
	for when, cheap := range map[string]bool{
		"change.kind == 'api' && new.token_lifetime_seconds > 86400":       true,
		"change.action == 'delete' && old.display_name == 'Prod'":          true,
		"new.scopes.exists(s, s.value == 'admin')":                         false,
		"new.display_name.matches('^Prod')":                                false,
		"'admin' in new.scopes":                                            false,
		"old == new":                                                       false,
		"change.kind == 'api' && new.scopes.all(s, s.value.size() < 1000)": false,
	} {
		ast, iss := env.Compile(when)
		if iss.Err() != nil {
			t.Fatal(iss.Err())
		}
		if got := cheapAtAnySize(ast); got != cheap {
			t.Errorf("%s: cheap %v, want %v", when, got, cheap)
		}
	}
}

// TestRulesOfAKindKeepTheRulesOrder: the rules a change of a kind is
// evaluated against are those of no kind and those of its kind, in the
// rules' order; a change of a kind no rule names meets the rules of no
// kind.
func TestRulesOfAKindKeepTheRulesOrder(t *testing.T) {
	var rules []config.Rule
	for i, when := range []string{
		`change.kind == 'api' && new.x == 1`,
		`new.x == 1`,
		`change.kind == 'role' && new.x == 1`,
		`change.action == 'create' && new.x == 1`,
		`change.kind == 'api' && change.action == 'update' && new.x == 1`,
		`change.kind == 'api'`,
	} {
		rules = append(rules, rule(fmt.Sprintf("r%d", i), when))
	}
	set, err := Programs(rules)
	if err != nil {
		t.Fatal(err)
	}
	ev := set.Evaluator(Environment{ID: "env_1", Name: "dev"})
	names := func(cs []Catch) string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Rule.RuleName())
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		kind, action, want string
	}{
		{"api", "create", "r0,r1,r3,r5"},
		{"api", "update", "r0,r1,r4,r5"},
		{"role", "create", "r1,r2,r3"},
		{"connection", "create", "r1,r3"},
		{"connection", "delete", "r1"},
	} {
		got := ev.Eval(Change{Kind: c.kind, Key: "k", Action: c.action, New: json.RawMessage(`{"x":1}`)})
		if names(got) != c.want {
			t.Errorf("%s %s: caught by %s, want %s", c.kind, c.action, names(got), c.want)
		}
	}
}

// TestUntrackedUpToIsTheLargestSizeWithinTheLimit: an expression runs
// without cost tracking only on inputs at whose size its estimate stays
// within MaxCost, and the size found is the largest power of two that
// does.
func TestUntrackedUpToIsTheLargestSizeWithinTheLimit(t *testing.T) {
	for when, want := range map[string]int{
		"change.kind == 'api' && new.token_lifetime_seconds > 86400":                 maxValueSize,
		"new.scopes.exists(s, s.value.startsWith('admin:'))":                         -1,
		"new.scopes.exists(s, new.scopes.exists(t, s.value == t.value))":             -1,
		"new.a.all(x, new.b.all(y, new.c.all(z, new.d.all(w, x + y + z + w == 0))))": 0,
		"change.kind == 'api' && new.scopes.all(s, s.value.size() < 1000)":           -1,
	} {
		ast, iss := env.Compile(when)
		if iss.Err() != nil {
			t.Fatal(iss.Err())
		}
		got := untrackedUpTo(ast)
		switch {
		case want >= 0 && got != want:
			t.Errorf("%s: untracked up to %d, want %d", when, got, want)
		case want < 0 && (got < 32 || got >= maxValueSize || !costWithin(ast, uint64(got)) || costWithin(ast, uint64(2*got))):
			t.Errorf("%s: untracked up to %d: not the largest power of two within the limit", when, got)
		}
		c := &compiled{fastUpTo: got}
		c.fast, _ = env.Program(ast)
		c.tracked, _ = env.Program(ast, cel.CostLimit(MaxCost))
		if got < maxValueSize && (c.program(got) != c.fast || c.program(got+1) != c.tracked) {
			t.Errorf("%s: the program of inputs up to %d bytes is not the untracked one, or of larger ones the tracked one", when, got)
		}
	}
}

// wholeProgram is when's program as it is written, its conditions
// included.
func wholeProgram(t *testing.T, when string) cel.Program {
	t.Helper()
	a, iss := env.Compile(when)
	if iss.Err() != nil {
		t.Fatal(iss.Err())
	}
	prg, err := env.Program(a)
	if err != nil {
		t.Fatal(err)
	}
	return prg
}

// TestTheResidualOfARuleGivesWhatTheRuleGivesWhereItsConditionsHold: a
// rule is run without its conditions once they hold (residual); over
// changes for which they do, it catches, fails or lets pass what the whole
// expression does, whatever the rest holds (macros, literals, escapes,
// members missing).
func TestTheResidualOfARuleGivesWhatTheRuleGivesWhereItsConditionsHold(t *testing.T) {
	whens := []string{
		`change.kind == 'api'`,
		`change.kind == 'api' && new.x > 1`,
		`'api' == change.kind && change.action == 'create' && (new.x == 1 || old.y == 2)`,
		`change.kind == 'api' && new.scopes.exists(s, s.value.startsWith('admin:'))`,
		`change.kind == 'api' && has(new.x) && !has(new.y) && size(new.scopes) > 1`,
		`change.kind == 'api' && new.name == 'a\'b\n' && environment.name == 'dev'`,
		`change.kind == 'api' && new.scopes.all(s, s.value in ['read', 'admin:all']) && {'a': 1}.a == 1`,
		`change.kind == 'api' && (new.x > 1 ? new.name.size() < 3 : change.key.startsWith('k'))`,
		`change.kind == 'api' && new.scopes.map(s, s.value).filter(v, v.endsWith('all')).size() == 1`,
		`change.kind == 'api' && old == null && new != null && change.key == 'k1'`,
	}
	specs := []string{
		`{"name":"a'b\n","scopes":[{"value":"read"},{"value":"admin:all"}],"x":2}`,
		`{"name":"zz","scopes":[{"value":"read"}],"x":1}`,
		`{"scopes":[]}`,
		`{"name":"a","scopes":[{"nope":1}],"x":0,"y":true}`,
	}
	for _, when := range whens {
		set, err := Programs([]config.Rule{rule("r", when)})
		if err != nil {
			t.Fatal(err)
		}
		if a, _ := env.Compile(when); len(set.rules[0].conds) == 0 || func() bool { _, ok := residual(a); return !ok }() {
			t.Fatalf("%s: no conditions, or no residual: the test would not test the residual", when)
		}
		whole := &Set{rules: []Rule{{Rule: rule("r", when), compiled: compiled{fast: wholeProgram(t, when), fastUpTo: maxValueSize}}}}
		for _, spec := range specs {
			for _, key := range []string{"k1", "other"} {
				c := Change{Kind: "api", Key: key, Action: "create", New: json.RawMessage(spec)}
				got := set.Evaluator(Environment{ID: "env_1", Name: "dev"}).Eval(c)
				want := whole.Evaluator(Environment{ID: "env_1", Name: "dev"}).Eval(c)
				if len(got) != len(want) || len(got) == 1 && (got[0].Err == nil) != (want[0].Err == nil) {
					t.Errorf("%s over %s (%s): the residual gives %+v, the whole expression %+v", when, spec, key, got, want)
				}
			}
		}
	}
}
