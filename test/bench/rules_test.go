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

func TestMedianFloat(t *testing.T) {
	xs := []float64{3, 1, 2, 10}
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{5}, 5}, {[]float64{3, 1, 2}, 2}, {xs, 2.5}} {
		if got := medianFloat(c.in); got != c.want {
			t.Errorf("medianFloat(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if xs[0] != 3 || xs[3] != 10 {
		t.Errorf("medianFloat reordered its input: %v", xs)
	}
}
