package plans

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// stored is a resource as the apply reads it.
func stored(kind config.Kind, key string, version int, spec string) *configdb.Resource {
	return &configdb.Resource{Kind: string(kind), Key: key, Version: version, Spec: configdb.JSON(config.Canonical([]byte(spec))),
		ResourceID: "con_" + key}
}

// applyFixture builds the state an apply's checks see: the stored
// resources, and a plan made of changes at the versions stored.
func applyFixture(resources []*configdb.Resource, changes ...Change) *applyState {
	cur := state{}
	for _, k := range config.Kinds {
		cur[k.Kind] = map[string]*configdb.Resource{}
	}
	for _, r := range resources {
		cur[config.Kind(r.Kind)][r.Key] = r
	}
	p := &Plan{Changes: changes, versions: map[string]int{}, fingerprints: map[config.Kind]int64{}}
	post := &postState{cur: cur, specs: map[string]json.RawMessage{}}
	for _, c := range changes {
		if r := cur.get(c.Kind, c.Key); r != nil {
			p.versions[resourceRef(c.Kind, c.Key)] = r.Version
		}
		if c.Action != ActionNoOp {
			post.specs[resourceRef(c.Kind, c.Key)] = c.Spec
		}
	}
	return &applyState{plan: p, cur: cur, post: post, gens: map[config.Kind]int64{}, tests: map[string]configdb.ConnectionTest{}}
}

func change(action Action, kind config.Kind, key, spec string) Change {
	c := Change{Kind: kind, Key: key, Action: action}
	if spec != "" {
		c.Spec = config.Canonical([]byte(spec))
	}
	return c
}

// problemOf returns the code of err and its "pointer code" lines.
func problemOf(t *testing.T, err error) (config.Code, []string) {
	t.Helper()
	if err == nil {
		return "", nil
	}
	var de *config.Error
	if !errors.As(err, &de) {
		t.Fatalf("err = %v, want an *Error", err)
	}
	var lines []string
	for _, fe := range de.Errors {
		lines = append(lines, fe.Pointer+" "+string(fe.Code))
	}
	return de.Code, lines
}

func TestApplyChecks(t *testing.T) {
	api, app, conn := validSpecs[config.KindAPI], validSpecs[config.KindApplication], validSpecs[config.KindConnection]
	activeConn := string(edit(t, config.KindConnection, "/active", "true"))
	otherAPI := string(edit(t, config.KindAPI, "/display_name", `"Other"`, "/identifier", `"https://api.shop.example/other"`))
	for _, tc := range []struct {
		name      string
		check     func(*applyState) error
		stored    []*configdb.Resource
		changes   []Change
		edit      func(*applyState)
		wantCode  config.Code
		wantLines []string
	}{
		{name: "conflict: nothing moved", check: checkConflicts,
			stored:  []*configdb.Resource{stored(config.KindAPI, "orders", 2, api)},
			changes: []Change{change(ActionUpdate, config.KindAPI, "orders", otherAPI)}},
		{name: "conflict: a version moved", check: checkConflicts,
			stored:   []*configdb.Resource{stored(config.KindAPI, "orders", 2, api)},
			changes:  []Change{change(ActionUpdate, config.KindAPI, "orders", otherAPI)},
			edit:     func(st *applyState) { st.plan.versions["api/orders"] = 1 },
			wantCode: config.CodeConfigConflict, wantLines: []string{"/changes/0 version_changed"}},
		{name: "conflict: a planned and a referencing type changed", check: checkConflicts,
			edit: func(st *applyState) {
				st.plan.Types, st.plan.ReferencingTypes = []config.Kind{config.KindAPI}, []config.Kind{config.KindRole}
				st.gens = map[config.Kind]int64{config.KindAPI: 2, config.KindRole: 3}
				st.plan.fingerprints = map[config.Kind]int64{config.KindAPI: 1, config.KindRole: 3}
			},
			wantCode: config.CodeConfigConflict, wantLines: []string{"/types/0 type_changed"}},
		{name: "conflict: a reference broke", check: checkConflicts,
			stored:   []*configdb.Resource{stored(config.KindConnection, "acme-sso", 1, conn)},
			changes:  []Change{change(ActionCreate, config.KindApplication, "portal", app)},
			wantCode: config.CodeConfigConflict, wantLines: []string{"/changes/0 reference_broken"}},
		{name: "conflict: a deleted api is referenced now", check: checkConflicts,
			stored: []*configdb.Resource{stored(config.KindAPI, "orders", 1, api), stored(config.KindConnection, "acme-sso", 1, conn),
				stored(config.KindApplication, "portal", 1, app)},
			changes:  []Change{change(ActionDelete, config.KindAPI, "orders", "")},
			wantCode: config.CodeConfigConflict, wantLines: []string{"/changes/0 reference_broken"}},
		{name: "unique value held by another resource", check: checkUniqueValues,
			stored:   []*configdb.Resource{stored(config.KindAPI, "orders", 1, api)},
			changes:  []Change{change(ActionCreate, config.KindAPI, "orders-2", api)},
			wantCode: config.CodeConflict, wantLines: []string{"/changes/0/spec/identifier duplicate"}},
		{name: "unique value held by the resource itself", check: checkUniqueValues,
			stored:  []*configdb.Resource{stored(config.KindAPI, "orders", 1, api)},
			changes: []Change{change(ActionUpdate, config.KindAPI, "orders", api)}},
		{name: "deleted connection still referenced", check: checkConnectionsInUse,
			stored: []*configdb.Resource{stored(config.KindConnection, "acme-sso", 1, conn), stored(config.KindAPI, "orders", 1, api),
				stored(config.KindApplication, "portal", 1, app)},
			changes:  []Change{change(ActionDelete, config.KindConnection, "acme-sso", "")},
			wantCode: config.CodeConnectionInUse, wantLines: []string{"/changes/0 in_use"}},
		{name: "deleted connection nobody references", check: checkConnectionsInUse,
			stored:  []*configdb.Resource{stored(config.KindConnection, "acme-sso", 1, conn)},
			changes: []Change{change(ActionDelete, config.KindConnection, "acme-sso", "")}},
		{name: "active enterprise connection created", check: checkConnectionsTested,
			changes:  []Change{change(ActionCreate, config.KindConnection, "acme-sso", activeConn)},
			wantCode: config.CodeConnectionTestRequired, wantLines: []string{"/changes/0/spec test_required"}},
		{name: "connection activated after a test of another material", check: checkConnectionsTested,
			stored:  []*configdb.Resource{stored(config.KindConnection, "acme-sso", 1, conn)},
			changes: []Change{change(ActionUpdate, config.KindConnection, "acme-sso", activeConn)},
			edit: func(st *applyState) {
				st.tests["con_acme-sso"] = configdb.ConnectionTest{Status: "succeeded", MaterialHash: "other"}
			},
			wantCode: config.CodeConnectionTestRequired, wantLines: []string{"/changes/0/spec test_required"}},
		{name: "connection activated after a test of its material", check: checkConnectionsTested,
			stored:  []*configdb.Resource{stored(config.KindConnection, "acme-sso", 1, conn)},
			changes: []Change{change(ActionUpdate, config.KindConnection, "acme-sso", activeConn)},
			edit: func(st *applyState) {
				st.tests["con_acme-sso"] = configdb.ConnectionTest{Status: "succeeded", MaterialHash: config.MaterialHash(config.ViewConnection(config.Canonical([]byte(activeConn))).OIDC)}
			}},
		{name: "active connection updated without a test", check: checkConnectionsTested,
			stored:  []*configdb.Resource{stored(config.KindConnection, "acme-sso", 1, activeConn)},
			changes: []Change{change(ActionUpdate, config.KindConnection, "acme-sso", activeConn)}},
		{name: "a change against the policies", check: checkApplyPolicies,
			changes: []Change{change(ActionCreate, config.KindApplication, "portal", app)},
			edit: func(st *applyState) {
				st.policies = config.Policies{AllowedCallbackHosts: []string{"elsewhere.example"}}
			},
			wantCode: config.CodePolicyConflict, wantLines: []string{"/changes/0/spec/callback_urls/0 allowed_callback_hosts"}},
		{name: "a deletion is not checked against the policies", check: checkApplyPolicies,
			stored:  []*configdb.Resource{stored(config.KindApplication, "portal", 1, app)},
			changes: []Change{change(ActionDelete, config.KindApplication, "portal", "")},
			edit: func(st *applyState) {
				st.policies = config.Policies{AllowedCallbackHosts: []string{"elsewhere.example"}}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := applyFixture(tc.stored, tc.changes...)
			if tc.edit != nil {
				tc.edit(st)
			}
			code, lines := problemOf(t, tc.check(st))
			if code != tc.wantCode {
				t.Fatalf("code = %q, want %q (%v)", code, tc.wantCode, lines)
			}
			if d := cmp.Diff(tc.wantLines, lines); d != "" {
				t.Errorf("problems (-want +got):\n%s", d)
			}
		})
	}
}

func TestApplyChecksAnswerTheFirstRowThatFails(t *testing.T) {
	api := validSpecs[config.KindAPI]
	// A version that moved (row 13) and a duplicate identifier (row 14):
	// row 13 answers.
	st := applyFixture([]*configdb.Resource{stored(config.KindAPI, "orders", 2, api)}, change(ActionCreate, config.KindAPI, "orders-2", api),
		change(ActionUpdate, config.KindAPI, "orders", api))
	st.plan.versions["api/orders"] = 1
	if code, _ := problemOf(t, runApplyChecks(st)); code != config.CodeConfigConflict {
		t.Fatalf("code = %q, want config_conflict", code)
	}
	st.plan.versions["api/orders"] = 2
	if code, _ := problemOf(t, runApplyChecks(st)); code != config.CodeConflict {
		t.Fatalf("code = %q, want conflict", code)
	}
}

func TestCheckDeletionsConfirmed(t *testing.T) {
	changes := []Change{change(ActionDelete, config.KindConnection, "legacy", ""), change(ActionDelete, config.KindApplication, "old", ""),
		change(ActionDelete, config.KindApplication, "busy", ""), change(ActionDelete, config.KindAPI, "orders", "")}
	recent := map[string]bool{"busy": true}
	if got := deletedApplications(changes); !cmp.Equal(got, []string{"old", "busy"}) {
		t.Errorf("deleted applications = %v", got)
	}
	for _, tc := range []struct {
		confirmed map[string]bool
		want      []string
	}{
		{map[string]bool{}, []string{"connection/legacy", "application/busy"}},
		{map[string]bool{"connection/legacy": true}, []string{"application/busy"}},
		{map[string]bool{"connection/legacy": true, "application/busy": true}, nil},
	} {
		err := checkDeletionsConfirmed(changes, recent, tc.confirmed)
		var de *config.Error
		switch {
		case tc.want == nil && err != nil:
			t.Errorf("confirmed %v: %v, want nil", tc.confirmed, err)
		case tc.want != nil && (!errors.As(err, &de) || de.Code != config.CodeDeletionNotConfirmed):
			t.Errorf("confirmed %v: %v, want deletion_not_confirmed", tc.confirmed, err)
		case tc.want != nil && !cmp.Equal(de.Extra["unconfirmed_deletions"], tc.want):
			t.Errorf("confirmed %v: unconfirmed %v, want %v", tc.confirmed, de.Extra["unconfirmed_deletions"], tc.want)
		}
	}
	// The planner warns of the same deletions.
	var warned []string
	for _, c := range changes {
		if w, ok := deletionWarning(c, "", recent); ok {
			warned = append(warned, w.Target)
		}
	}
	if d := cmp.Diff([]string{"connection/legacy", "application/busy"}, warned); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
}
