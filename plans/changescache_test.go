package plans

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/federation"
	"github.com/keenauth/configplans/test/testdb"
)

// TestChangesCacheKeepsTheMostRecentlyUsedWithinItsBytes: the cache holds
// at most its bytes of stored changes, dropping the least recently used
// first; a plan over planCacheEntryMax is not kept; forget drops one; a
// cache of no bytes keeps nothing.
func TestChangesCacheKeepsTheMostRecentlyUsedWithinItsBytes(t *testing.T) {
	t.Parallel()
	key := func(id string) configdb.PlanKey { return configdb.PlanKey{EnvironmentID: "env_a", ID: id} }
	c := newChangesCache(100)
	c.put(key("a"), []Change{{Key: "a"}}, 40)
	c.put(key("b"), []Change{{Key: "b"}}, 40)
	if c.get(key("a")) == nil { // a is now the most recently used
		t.Fatal("a is not kept")
	}
	c.put(key("c"), []Change{{Key: "c"}}, 40) // 120 bytes: b goes
	if c.get(key("b")) != nil {
		t.Error("b, the least recently used, is still kept past the cache's bytes")
	}
	for _, id := range []string{"a", "c"} {
		if got := c.get(key(id)); got == nil || got.changes[0].Key != id || got.bytes != 40 {
			t.Errorf("%s: kept %+v", id, got)
		}
	}
	if c.bytes != 80 || len(c.m) != 2 || c.lru.Len() != 2 {
		t.Errorf("bytes %d, entries %d/%d, want 80, 2", c.bytes, len(c.m), c.lru.Len())
	}
	c.put(key("a"), []Change{{Key: "a2"}}, 30) // kept again: replaced
	if got := c.get(key("a")); got == nil || got.changes[0].Key != "a2" || c.bytes != 70 {
		t.Errorf("a put again: %+v, %d bytes", got, c.bytes)
	}
	c.forget(key("a"))
	if c.get(key("a")) != nil || c.bytes != 40 {
		t.Errorf("a forgotten: still kept, or %d bytes", c.bytes)
	}

	big := newChangesCache(64 << 20)
	big.put(key("huge"), []Change{}, planCacheEntryMax+1)
	if big.get(key("huge")) != nil {
		t.Error("a plan over planCacheEntryMax is kept")
	}
	var none *changesCache = newChangesCache(0)
	none.put(key("a"), []Change{}, 1)
	if none != nil || none.get(key("a")) != nil {
		t.Error("a cache of no bytes keeps changes")
	}
	none.forget(key("a"))
}

// TestCachedChangesServeOnlyTheChangesStored: kept changes serve a plan
// read without its changes while it is neither applied nor applying (an
// apply may have given its created connections their ids) and its stored
// changes have the size kept.
func TestCachedChangesServeOnlyTheChangesStored(t *testing.T) {
	t.Parallel()
	cc := &cachedChanges{bytes: 120}
	for _, c := range []struct {
		status string
		bytes  int64
		want   bool
	}{
		{"planned", 120, true}, {"conflicted", 120, true}, {"rejected", 120, true},
		{"applied", 120, false}, {"applying", 120, false}, {"planned", 121, false},
	} {
		if got := cc.serves(&configdb.PlanRow{Status: c.status, ChangesBytes: c.bytes}); got != c.want {
			t.Errorf("%s, %d bytes: serves %v, want %v", c.status, c.bytes, got, c.want)
		}
	}
}

// TestCacheableChangesAreTheChangesDecoded: a plan's changes as kept at its
// creation are those planFromRow decodes from its stored form, every
// field alike: creates, updates, deletions and no-ops, a connection with
// OIDC material, one kept with its material and one planned with its
// former id.
func TestCacheableChangesAreTheChangesDecoded(t *testing.T) {
	t.Parallel()
	v := func(n int) *int { return &n }
	changes := []Change{
		{Kind: config.KindAPI, Key: "orders", Action: ActionCreate, Spec: json.RawMessage(`{"identifier":"https://x.example"}`),
			Diff: []config.DiffOp{{Op: "add", Path: "", Value: json.RawMessage(`{"identifier":"https://x.example"}`)}}},
		{Kind: config.KindAPI, Key: "billing", Action: ActionUpdate, BaseVersion: v(3), Spec: json.RawMessage(`{"display_name":"B"}`),
			Diff: []config.DiffOp{{Op: "replace", Path: "/display_name", Old: json.RawMessage(`"A"`), Value: json.RawMessage(`"B"`)}}},
		{Kind: config.KindRole, Key: "reader", Action: ActionDelete, BaseVersion: v(1)},
		{Kind: config.KindRole, Key: "writer", Action: ActionNoOp, BaseVersion: v(2), Spec: json.RawMessage(`{"display_name":"W"}`)},
		{Kind: config.KindConnection, Key: "acme", Action: ActionCreate, Spec: json.RawMessage(`{"type":"enterprise"}`),
			Diff: []config.DiffOp{{Op: "add", Path: "", Value: json.RawMessage(`{"type":"enterprise"}`)}}, RequiresSecret: true,
			SecretRef: "connections/acme/oidc/client_secret", ResourceID: json.RawMessage(`null`), WritesMaterial: true},
		{Kind: config.KindConnection, Key: "corp", Action: ActionUpdate, BaseVersion: v(4), Spec: json.RawMessage(`{"type":"enterprise","oidc":null}`),
			Diff: []config.DiffOp{}, ResourceID: json.RawMessage(`"con_01"`), KeepsMaterial: true},
		{Kind: config.KindConnection, Key: "back", Action: ActionCreate, Spec: json.RawMessage(`{"type":"database"}`),
			Diff: []config.DiffOp{{Op: "add", Path: "", Value: json.RawMessage(`{"type":"database"}`)}}, ResourceID: json.RawMessage(`"con_02"`)},
	}
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	p := &Plan{ID: "cfgp_01", EnvironmentID: "env_a", Status: StatusPlanned, CreatedAt: Time(now), ExpiresAt: Time(now.Add(time.Hour)),
		Types: []config.Kind{config.KindAPI, config.KindConnection, config.KindRole}, Changes: changes}
	row := newPlanRow(p)
	s := &Service{core: core{now: func() time.Time { return now }}}
	decoded, err := s.planFromRow(row)
	if err != nil {
		t.Fatal(err)
	}
	kept := cacheableChanges(changes)
	if !reflect.DeepEqual(kept, decoded.Changes) {
		for i := range kept {
			if !reflect.DeepEqual(kept[i], decoded.Changes[i]) {
				t.Errorf("change %d kept as\n%#v\ndecoded as\n%#v", i, kept[i], decoded.Changes[i])
			}
		}
	}
	if &kept[0] == &changes[0] {
		t.Error("the kept changes share the plan's slice")
	}
}

// TestChangesAreKeptOnPostgreSQLOnly: the domain over PostgreSQL keeps the
// changes of the plans it creates, within PlanCacheBytes (0: none); over
// SQLite (keenauthd dev), which reads a plan in the process, it keeps none.
func TestChangesAreKeptOnPostgreSQLOnly(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	pg := New(configdb.New(testdb.New(t).DB, nil, configdb.Options{}), federation.Unconfigured{}, cfg, nil, Hooks{})
	if pg.Plans.changes == nil || pg.Plans.changes.max != DefaultPlanCacheBytes {
		t.Errorf("PostgreSQL: cache %+v, want one of %d bytes", pg.Plans.changes, DefaultPlanCacheBytes)
	}
	sqlite := New(configdb.New(testdb.NewSQLite(t).DB, nil, configdb.Options{}), federation.Unconfigured{}, cfg, nil, Hooks{})
	if sqlite.Plans.changes != nil {
		t.Error("SQLite: changes are kept")
	}
	cfg.PlanCacheBytes = 0
	if none := New(configdb.New(testdb.New(t).DB, nil, configdb.Options{}), federation.Unconfigured{}, cfg, nil, Hooks{}); none.Plans.changes != nil {
		t.Error("PlanCacheBytes 0: changes are kept")
	}
}
