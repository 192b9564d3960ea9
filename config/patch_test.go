package config

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// TestRevertGivesTheSpecADiffStartedFrom reverts the diffs of random pairs
// of specs: from the new spec and the diff, Revert gives the old spec back.
// DIFF_SEED=n replays a run.
func TestRevertGivesTheSpecADiffStartedFrom(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("DIFF_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("DIFF_SEED: %v", err)
		}
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	kinds := []func(*rand.Rand) map[string]any{genApplication, genAPI, genRole, genIdentitySettings, genEnterpriseConnection}
	for i := range 2000 {
		gen := kinds[i%len(kinds)]
		before := gen(rng)
		after := mutate(rng, before)
		if rng.IntN(3) == 0 {
			after = gen(rng)
		}
		b, a := CanonicalJSON(before), CanonicalJSON(after)
		ops := Diff(b, a)
		got, ok := Revert(a, ops)
		if !ok || !reflect.DeepEqual(mustDecode(got), mustDecode(b)) {
			opsJSON, _ := json.Marshal(ops)
			t.Fatalf("DIFF_SEED=%d, case %d: Revert = %s, %v\nbefore %s\nafter  %s\nops    %s", seed, i, got, ok, b, a, opsJSON)
		}
	}
}

// TestRevertWholeSpecsAndOpsWithoutOld: a created spec reverts to absent,
// a deleted one to its old value; an op that carries no old (a plan stored
// before old was recorded) or does not apply cannot be reverted.
func TestRevertWholeSpecsAndOpsWithoutOld(t *testing.T) {
	t.Parallel()
	spec := json.RawMessage(`{"display_name":"Reader","permissions":[{"api":"orders","scope":"read"}]}`)
	if got, ok := Revert(spec, Diff(nil, spec)); !ok || got != nil {
		t.Errorf("revert of a create = %s, %v; want absent", got, ok)
	}
	if got, ok := Revert(nil, Diff(spec, nil)); !ok || string(got) != string(spec) {
		t.Errorf("revert of a delete = %s, %v; want %s", got, ok, spec)
	}
	if got, ok := Revert(spec, []DiffOp{}); !ok || string(got) != string(spec) {
		t.Errorf("revert of no op = %s, %v", got, ok)
	}
	for name, ops := range map[string][]DiffOp{
		"replace without old": {{Op: "replace", Path: "/display_name", Value: json.RawMessage(`"Reader"`)}},
		"remove without old":  {{Op: "remove", Path: "/description"}},
		"missing member":      {{Op: "replace", Path: "/nope", Old: json.RawMessage(`1`), Value: json.RawMessage(`2`)}},
		"index past the end":  {{Op: "add", Path: "/permissions/3", Value: json.RawMessage(`{}`)}},
		"bad index":           {{Op: "add", Path: "/permissions/01", Value: json.RawMessage(`{}`)}},
		"not a pointer":       {{Op: "add", Path: "display_name", Value: json.RawMessage(`"x"`)}},
	} {
		if got, ok := Revert(spec, ops); ok {
			t.Errorf("%s: Revert = %s, true; want false", name, got)
		}
	}
}
