package main

import (
	"encoding/json"
	"testing"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/guardrails"
)

// TestP11RulesCompileAndCatchNoChange: P11's 50 rules pass the policies'
// PUT, and none catches a change of its document, so that both of P11's
// plans are alike.
func TestP11RulesCompileAndCatchNoChange(t *testing.T) {
	t.Parallel()
	var rules []config.Rule
	raw, _ := json.Marshal(benchRules(50))
	if err := json.Unmarshal(raw, &rules); err != nil {
		t.Fatal(err)
	}
	if len(rules) != 50 {
		t.Fatalf("%d rules", len(rules))
	}
	if problems := guardrails.Check(rules); len(problems) > 0 {
		t.Fatalf("refused: %v", problems)
	}
	set, err := guardrails.Programs(rules)
	if err != nil {
		t.Fatal(err)
	}
	ev := set.Evaluator(guardrails.Environment{ID: "env_1", Name: "rules-1"})
	for key, spec := range keyedSpecs("r", 20, 0) {
		if got := ev.Eval(guardrails.Change{Kind: "api", Key: key, Action: "create", New: canonicalJSON(spec)}); len(got) > 0 {
			t.Fatalf("%s caught by %s: %s", key, got[0].Rule.RuleName(), got[0].Detail())
		}
	}
}
