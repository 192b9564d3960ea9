package plans

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// planFixture builds the state the planner's checks see: the stored
// resources with entries laid over them.
func planFixture(resources []*configdb.Resource, entries ...entry) *planState {
	st := applyFixture(resources)
	ps := &planState{cur: st.cur, entries: entries, inDoc: map[string]bool{},
		post: &postState{cur: st.cur, specs: map[string]json.RawMessage{}}}
	for i, e := range entries {
		if e.spec != nil {
			ps.entries[i].spec = config.Canonical(e.spec)
		}
		ps.post.specs[resourceRef(e.kind, e.key)] = ps.entries[i].spec
		if e.pointer != "" {
			ps.inDoc[resourceRef(e.kind, e.key)] = true
		}
	}
	return ps
}

func linesOf(errs []config.FieldError) []string {
	var out []string
	for _, fe := range errs {
		out = append(out, fe.Pointer+" "+string(fe.Code))
	}
	return out
}

func TestReferenceProblems(t *testing.T) {
	api, app, conn := validSpecs[config.KindAPI], validSpecs[config.KindApplication], validSpecs[config.KindConnection]
	noScope := string(edit(t, config.KindAPI, "/scopes", `[]`))
	for _, tc := range []struct {
		name    string
		stored  []*configdb.Resource
		entries []entry
		want    []string
	}{
		{"every reference resolves", []*configdb.Resource{stored(config.KindAPI, "orders", 1, api), stored(config.KindConnection, "acme-sso", 1, conn)},
			[]entry{{config.KindApplication, "portal", json.RawMessage(app), "/config/applications/portal"}}, nil},
		{"a missing connection and api", nil,
			[]entry{{config.KindApplication, "portal", json.RawMessage(app), "/config/applications/portal"}},
			[]string{"/config/applications/portal/connections/0 dangling_reference", "/config/applications/portal/api_grants/0/api dangling_reference"}},
		{"a scope the api lacks", []*configdb.Resource{stored(config.KindConnection, "acme-sso", 1, conn)},
			[]entry{{config.KindAPI, "orders", json.RawMessage(noScope), "/config/apis/orders"}, {config.KindApplication, "portal", json.RawMessage(app), "/config/applications/portal"}},
			[]string{"/config/applications/portal/api_grants/0/scopes/0 unknown_scope"}},
		{"a pruned api still referenced", []*configdb.Resource{stored(config.KindAPI, "orders", 1, api), stored(config.KindConnection, "acme-sso", 1, conn),
			stored(config.KindApplication, "portal", 1, app)},
			[]entry{{config.KindAPI, "orders", nil, ""}}, []string{"/prune in_use"}},
		{"a deleted connection still used", []*configdb.Resource{stored(config.KindAPI, "orders", 1, api), stored(config.KindConnection, "acme-sso", 1, conn),
			stored(config.KindApplication, "portal", 1, app)},
			[]entry{{config.KindConnection, "acme-sso", nil, "/config/connections/acme-sso"}}, []string{"/config/connections/acme-sso in_use"}},
		{"a pruned connection still used", []*configdb.Resource{stored(config.KindAPI, "orders", 1, api), stored(config.KindConnection, "acme-sso", 1, conn),
			stored(config.KindApplication, "portal", 1, app)},
			[]entry{{config.KindConnection, "acme-sso", nil, ""}}, []string{"/prune in_use"}},
		{"a connection deleted with its user", []*configdb.Resource{stored(config.KindAPI, "orders", 1, api), stored(config.KindConnection, "acme-sso", 1, conn),
			stored(config.KindApplication, "portal", 1, app)},
			[]entry{{config.KindConnection, "acme-sso", nil, ""}, {config.KindApplication, "portal", nil, "/config/applications/portal"}}, nil},
		{"a missing connection mapped to null", nil,
			[]entry{{config.KindConnection, "acme-sso", nil, "/config/connections/acme-sso"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := planFixture(tc.stored, tc.entries...)
			if d := cmp.Diff(tc.want, linesOf(referenceProblems(ps.entries, ps.post))); d != "" {
				t.Errorf("problems (-want +got):\n%s", d)
			}
		})
	}
}

func TestPlanPolicyViolationsSkipUnchangedSpecs(t *testing.T) {
	app := validSpecs[config.KindApplication]
	policies := config.Policies{AllowedCallbackHosts: []string{"elsewhere.example"}}
	unchanged := planFixture([]*configdb.Resource{stored(config.KindApplication, "portal", 1, app)},
		entry{config.KindApplication, "portal", json.RawMessage(app), "/config/applications/portal"})
	if got := planPolicyViolations(unchanged.entries, unchanged.cur, policies); got != nil {
		t.Errorf("an unchanged spec: %v, want none", linesOf(got))
	}
	created := planFixture(nil, entry{config.KindApplication, "portal", json.RawMessage(app), "/config/applications/portal"})
	want := []string{"/config/applications/portal/callback_urls/0 allowed_callback_hosts"}
	if d := cmp.Diff(want, linesOf(planPolicyViolations(created.entries, created.cur, policies))); d != "" {
		t.Errorf("a created spec (-want +got):\n%s", d)
	}
}

func TestKeepMaterial(t *testing.T) {
	conn := validSpecs[config.KindConnection]
	nullOIDC := string(edit(t, config.KindConnection, "/oidc", "null"))
	ps := planFixture([]*configdb.Resource{stored(config.KindConnection, "acme-sso", 1, conn)},
		entry{config.KindConnection, "acme-sso", json.RawMessage(nullOIDC), "/config/connections/acme-sso"},
		entry{config.KindConnection, "new-sso", json.RawMessage(nullOIDC), "/config/connections/new-sso"})
	if d := cmp.Diff([]string{"/config/connections/new-sso/oidc required"}, linesOf(ps.keepMaterial())); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
	if !ps.keep["acme-sso"] || ps.keep["new-sso"] {
		t.Errorf("keep = %v, want acme-sso only", ps.keep)
	}
	if got, want := string(ps.entries[0].spec), string(config.Canonical([]byte(conn))); got != want {
		t.Errorf("kept spec = %s, want the stored one %s", got, want)
	}
}

func TestUniqueWarningsNameAHolderOutsideTheDocument(t *testing.T) {
	api := validSpecs[config.KindAPI]
	ps := planFixture([]*configdb.Resource{stored(config.KindAPI, "orders", 1, api)},
		entry{config.KindAPI, "orders-2", json.RawMessage(api), "/config/apis/orders-2"})
	c := change(ActionCreate, config.KindAPI, "orders-2", api)
	us := config.UniqueValues(config.KindAPI, c.Spec)
	ws := uniqueWarnings(c, "/changes/0", us, ps.post.uniqueHolders(config.KindAPI), ps.inDoc)
	if len(ws) != 1 || ws[0].Code != config.CodeUniqueValueInUse || ws[0].Pointer != "/changes/0/spec/identifier" {
		t.Fatalf("warnings = %+v, want one unique_value_in_use at /changes/0/spec/identifier", ws)
	}
	ps.inDoc["api/orders"] = true // the holder is in the document: validation answers it
	if ws := uniqueWarnings(c, "/changes/0", us, ps.post.uniqueHolders(config.KindAPI), ps.inDoc); len(ws) != 0 {
		t.Fatalf("warnings = %+v, want none", ws)
	}
}
