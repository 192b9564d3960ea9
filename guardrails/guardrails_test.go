package guardrails

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/keenauth/configplans/config"
)

func rule(name, when string) config.Rule {
	block := config.EnforceBlock
	msg := "caught by " + name
	return config.Rule{Name: &name, When: &when, Enforcement: &block, Message: &msg}
}

func TestCheckRefusesWhatDoesNotCompileIsNotBoolOrCostsTooMuch(t *testing.T) {
	cases := []struct {
		when, want string
	}{
		{`change.kind ==`, "Syntax error"},
		{`change.nope == 'x'`, ""}, // a map's missing key is a run-time matter
		{`unknown_var == 1`, "undeclared reference"},
		{`change.kind`, "must be of type bool"},
		{`1 + 1`, "must be of type bool"},
		// Nested comprehensions over lists of unknown size: 1,000 × 1,000
		// iterations and more.
		{`new.permissions.exists(p, new.permissions.exists(q, p.scope == q.scope))`, "estimated cost"},
		{`new.a.all(x, new.b.all(y, new.c.all(z, x == y && y == z)))`, "estimated cost"},
		{`change.kind == 'identity_settings' && new.mfa != 'required'`, ""},
		{`change.kind == 'connection' && change.action == 'delete' && old.display_name.startsWith('Prod')`, ""},
		{`new.callback_urls.exists(u, u.matches('^http://'))`, ""},
	}
	for _, c := range cases {
		problems := Check([]config.Rule{rule("r", c.when)})
		switch {
		case c.want == "" && len(problems) > 0:
			t.Errorf("%s: refused: %v", c.when, problems)
		case c.want != "" && (len(problems) != 1 || !strings.Contains(problems[0].Detail, c.want) ||
			problems[0].Pointer != "/rules/0/when" || problems[0].Code != config.CodeInvalidExpression):
			t.Errorf("%s: got %+v, want one invalid_expression at /rules/0/when saying %q", c.when, problems, c.want)
		}
	}
}

func eval(t *testing.T, when string, c Change) []Catch {
	t.Helper()
	s, err := Programs([]config.Rule{rule("r", when)})
	if err != nil {
		t.Fatal(err)
	}
	return s.Evaluator(Environment{ID: "env_1", Name: "prod"}).Eval(c)
}

func TestEvalCatchesWhenTrue(t *testing.T) {
	mfaOff := Change{Kind: "identity_settings", Key: "identity_settings", Action: "update",
		Old: json.RawMessage(`{"mfa":"required"}`), New: json.RawMessage(`{"mfa":"optional"}`)}
	cases := []struct {
		when   string
		c      Change
		caught bool
	}{
		{`change.kind == 'identity_settings' && new.mfa != 'required'`, mfaOff, true},
		{`change.kind == 'identity_settings' && old.mfa != 'required'`, mfaOff, false},
		{`environment.name == 'prod' && environment.id == 'env_1' && change.action == 'update'`, mfaOff, true},
		{`change.kind == 'api' && new.token_lifetime_seconds > 3600`,
			Change{Kind: "api", Key: "a", Action: "create", New: json.RawMessage(`{"token_lifetime_seconds":7200}`)}, true},
		{`change.kind == 'api' && new.token_lifetime_seconds > 3600.5`,
			Change{Kind: "api", Key: "a", Action: "create", New: json.RawMessage(`{"token_lifetime_seconds":3600}`)}, false},
		{`old == null && change.action == 'create'`, Change{Kind: "api", Key: "a", Action: "create", New: json.RawMessage(`{}`)}, true},
		{`new == null`, Change{Kind: "api", Key: "a", Action: "delete", Old: json.RawMessage(`{}`)}, true},
		// Specs are read lazily (jsonObject): every way of reading one.
		{`has(new.mfa) && !has(new.nope) && 'mfa' in new && size(new) == 1`, mfaOff, true},
		{`old == new`, mfaOff, false},
		{`old == {'mfa': 'required'} && {'mfa': 'optional'} == new`, mfaOff, true},
		{`new.pp.min_length < 12 && new.pp.digits && new.list.exists(x, x.v == 'b') && new.list[0].v == 'a'`,
			Change{Kind: "identity_settings", Key: "identity_settings", Action: "update", Old: json.RawMessage(`{}`),
				New: json.RawMessage(`{"list":[{"v":"a"},{"v":"b"}],"pp":{"digits":true,"min_length":10}}`)}, true},
		{`new.all(k, k != 'nope') && old.exists(k, k == 'mfa')`, mfaOff, true},
		// change and environment are records: every way of reading one.
		{`change == {'kind': 'identity_settings', 'key': 'identity_settings', 'action': 'update'} && size(change) == 3`, mfaOff, true},
		{`'action' in change && !('nope' in change) && change.exists(k, k == 'key') && change.key.startsWith('identity')`, mfaOff, true},
		{`environment == {'id': 'env_1', 'name': 'prod'} && environment.all(k, k in ['id', 'name'])`, mfaOff, true},
		{`change.kind == environment.name`, mfaOff, false},
	}
	for _, c := range cases {
		got := eval(t, c.when, c.c)
		if (len(got) == 1) != c.caught || len(got) == 1 && got[0].Err != nil {
			t.Errorf("%s: got %+v, want caught %v without error", c.when, got, c.caught)
		}
	}
}

func TestEvalErrorsCatchTheChange(t *testing.T) {
	// A missing member without has(), and null's member on a deletion.
	for _, c := range []struct {
		when string
		c    Change
	}{
		{`new.nope == 'x'`, Change{Kind: "api", Key: "a", Action: "create", New: json.RawMessage(`{}`)}},
		{`new.display_name == 'x'`, Change{Kind: "api", Key: "a", Action: "delete", Old: json.RawMessage(`{}`)}},
		{`change.nope == 'x'`, Change{Kind: "api", Key: "a", Action: "create", New: json.RawMessage(`{}`)}},
		{`environment.nope == 'x'`, Change{Kind: "api", Key: "a", Action: "create", New: json.RawMessage(`{}`)}},
	} {
		got := eval(t, c.when, c.c)
		if len(got) != 1 || got[0].Err == nil || !strings.Contains(got[0].Detail(), "could not be evaluated") {
			t.Errorf("%s: got %+v, want a catch with its error", c.when, got)
		}
	}
}

func TestEvalStopsAtTheRuntimeCostLimit(t *testing.T) {
	// The estimate counts a list at 1,000 elements: 1,000 scopes × 100
	// banned values pass. An API's scopes are not bounded, and 5,000 of
	// them run the same rule over the limit.
	var banned []string
	for i := range 100 {
		banned = append(banned, fmt.Sprintf("'banned:%d'", i))
	}
	when := `change.kind == 'api' && new.scopes.exists(s, [` + strings.Join(banned, ",") + `].exists(b, s.value == b))`
	if p := Check([]config.Rule{rule("r", when)}); len(p) > 0 {
		t.Fatalf("the rule is refused at PUT: %v", p)
	}
	scopes := make([]map[string]string, 5000)
	for i := range scopes {
		scopes[i] = map[string]string{"value": fmt.Sprintf("read:%d", i)}
	}
	few := Change{Kind: "api", Key: "a", Action: "create", New: config.MustJSON(map[string]any{"scopes": scopes[:10]})}
	if got := eval(t, when, few); len(got) != 0 {
		t.Fatalf("10 scopes: got %+v, want no catch", got)
	}
	many := Change{Kind: "api", Key: "a", Action: "create", New: config.MustJSON(map[string]any{"scopes": scopes})}
	got := eval(t, when, many)
	if len(got) != 1 || got[0].Err == nil || !strings.Contains(got[0].Err.Error(), "cost limit") {
		t.Fatalf("5,000 scopes: got %+v, want a catch stopped by the cost limit", got)
	}
}

func TestProgramsAreCompiledOncePerRules(t *testing.T) {
	rules := []config.Rule{rule("a", `change.kind == 'api'`), rule("b", `change.kind == 'role'`)}
	s1, err := Programs(rules)
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := Programs([]config.Rule{rule("a", `change.kind == 'api'`), rule("b", `change.kind == 'role'`)})
	if s1 != s2 {
		t.Error("the same rules were compiled twice")
	}
	s3, _ := Programs(rules[:1])
	if s3 == s1 {
		t.Error("other rules share the compiled set")
	}
}
