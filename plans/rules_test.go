package plans

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"testing"

	"github.com/keenauth/configplans/config"
)

// TestRulesOfALargePlanAreEvaluatedInPartsAsInOne: the rules of a plan
// large enough to be evaluated in parts at once give the warnings and the
// problems, in the changes' order, that one pass over its changes gives;
// run with -race, it also shows the evaluation shares nothing it writes.
func TestRulesOfALargePlanAreEvaluatedInPartsAsInOne(t *testing.T) {
	rule := func(name, when string, e config.Enforcement) config.Rule {
		msg := "caught by " + name
		return config.Rule{Name: &name, When: &when, Enforcement: &e, Message: &msg}
	}
	pol := config.Policies{Rules: []config.Rule{
		rule("long-lived", `change.kind == 'api' && new.token_lifetime_seconds > 5000`, config.EnforceWarn),
		rule("shorter", `change.kind == 'api' && old != null && new.token_lifetime_seconds < old.token_lifetime_seconds`, config.EnforceBlock),
		rule("no-admin", `new != null && new.scopes.exists(s, s.value.startsWith('admin:'))`, config.EnforceWarn),
	}}
	// Four parts, whatever the machine's processors.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	ev, err := rulesEvaluator("env_1", "dev", pol)
	if err != nil {
		t.Fatal(err)
	}
	n := 4*rulesChunk + 7
	changes := make([]Change, n)
	olds := make([]json.RawMessage, n)
	for i := range changes {
		scope := "read:x"
		if i%97 == 0 {
			scope = "admin:x"
		}
		spec := fmt.Sprintf(`{"scopes":[{"value":%q}],"token_lifetime_seconds":%d}`, scope, 3600+i*7)
		changes[i] = Change{Kind: config.KindAPI, Key: fmt.Sprintf("a%04d", i), Action: ActionCreate, Spec: json.RawMessage(spec)}
		if i%3 == 0 {
			changes[i].Action = ActionUpdate
			olds[i] = json.RawMessage(fmt.Sprintf(`{"token_lifetime_seconds":%d}`, 3600+i*7+(i%2)))
		}
		if i%50 == 49 {
			changes[i].Action = ActionNoOp
		}
	}
	in := ruleInput{changes: changes, old: func(i int) json.RawMessage { return olds[i] },
		pointer: func(i int) string { return fmt.Sprintf("/changes/%d", i) }}
	got := evalRules(ev, in)
	var want ruleVerdict
	for i, c := range changes {
		if c.Action == ActionNoOp {
			continue
		}
		for _, caught := range ev.Eval(guardrailsChange(c, olds[i])) {
			want.add(caught, c, i, in.pointer)
		}
	}
	if len(want.warnings) < 100 || len(want.blocks) < 50 {
		t.Fatalf("the rules caught %d and blocked %d changes: too few for the test to tell", len(want.warnings), len(want.blocks))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("in parts: %d warnings, %d problems; in one pass: %d, %d; or another order", len(got.warnings), len(got.blocks), len(want.warnings), len(want.blocks))
	}
}
