package plans

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// referrersReference is referrers as it was before its index: every
// resource of the referencing kinds read for each question.
func referrersReference(p *postState, k config.Kind, key string) []string {
	var out []string
	for _, rk := range referencedBy[k] {
		p.each(rk, func(rkey string, spec json.RawMessage) {
			for _, ref := range config.References(rk, rkey, spec) {
				if ref.Kind == k && ref.Key == key {
					out = append(out, resourceRef(rk, rkey))
					return
				}
			}
		})
	}
	return out
}

// TestReferrersAsTheReference holds the indexed referrers to the scan they
// replace, on random post-plan states: roles and applications, current
// and planned (some deleted, some laid over a current one), naming apis
// and connections more than once, questions about keys referenced or not.
func TestReferrersAsTheReference(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		apis := []string{"orders", "billing", "users", "ghost"}
		cons := []string{"google", "okta", "db"}
		pick := func(from []string) string { return from[rng.IntN(len(from))] }
		roleSpec := func() json.RawMessage {
			var perms []map[string]any
			for range rng.IntN(4) {
				perms = append(perms, map[string]any{"api": pick(apis), "scope": "read"})
			}
			b, _ := json.Marshal(map[string]any{"name": "r", "permissions": perms})
			return b
		}
		appSpec := func() json.RawMessage {
			var conns []string
			for range rng.IntN(3) {
				conns = append(conns, pick(cons))
			}
			var grants []map[string]any
			for range rng.IntN(3) {
				grants = append(grants, map[string]any{"api": pick(apis), "scopes": []string{"read", "write"}[:1+rng.IntN(2)]})
			}
			b, _ := json.Marshal(map[string]any{"name": "a", "connections": conns, "api_grants": grants})
			return b
		}
		p := &postState{cur: state{}, specs: map[string]json.RawMessage{}}
		for kind, spec := range map[config.Kind]func() json.RawMessage{config.KindRole: roleSpec, config.KindApplication: appSpec} {
			var rows []configdb.Resource
			for i := range rng.IntN(6) {
				key := fmt.Sprintf("%s-%d", kind, i)
				rows = append(rows, configdb.Resource{Kind: string(kind), Key: key, Spec: configdb.JSON(spec())})
			}
			p.cur.add(rows, false)
			for i := range rng.IntN(6) {
				key := fmt.Sprintf("%s-%d", kind, i+rng.IntN(3))
				if rng.IntN(4) == 0 {
					p.specs[resourceRef(kind, key)] = nil // deleted
				} else {
					p.specs[resourceRef(kind, key)] = spec()
				}
			}
		}
		for _, q := range []struct {
			kind config.Kind
			keys []string
		}{{config.KindAPI, apis}, {config.KindConnection, cons}, {config.KindAPI, []string{"nobody"}}} {
			for _, key := range q.keys {
				want := referrersReference(p, q.kind, key)
				if diff := cmp.Diff(want, p.referrers(q.kind, key)); diff != "" {
					t.Fatalf("seed %d: referrers of %s/%s (-scan +index):\n%s", seed, q.kind, key, diff)
				}
			}
		}
	}
}

// BenchmarkReferrersOf1000Deletions asks for the referrers of each of
// 1,000 deleted apis beside 100 roles, as the checks of a plan deleting
// them do.
func BenchmarkReferrersOf1000Deletions(b *testing.B) {
	p := &postState{cur: state{}, specs: map[string]json.RawMessage{}}
	var roles []configdb.Resource
	for i := range 100 {
		spec, _ := json.Marshal(map[string]any{"name": "r", "permissions": []map[string]any{{"api": fmt.Sprintf("kept-%d", i), "scope": "read"}}})
		roles = append(roles, configdb.Resource{Kind: string(config.KindRole), Key: fmt.Sprintf("role-%d", i), Spec: configdb.JSON(spec)})
	}
	p.cur.add(roles, false)
	for i := range 1000 {
		p.specs[resourceRef(config.KindAPI, fmt.Sprintf("api-%d", i))] = nil
	}
	for b.Loop() {
		p.referrersOf = nil
		for i := range 1000 {
			if refs := p.referrers(config.KindAPI, fmt.Sprintf("api-%d", i)); len(refs) != 0 {
				b.Fatal(refs)
			}
		}
	}
}
