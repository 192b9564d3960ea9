package guardrails

import (
	"encoding/json"
	"testing"

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
		full := &Set{rules: []Rule{{Rule: rule("r", c.when), prg: comp.prg}}}
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
