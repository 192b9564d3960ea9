package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/test/apitest"
)

// logPage reads one page of the management log.
func (k *applyEnv) logPage(query string) (data []map[string]any, hasMore bool, next any) {
	k.t.Helper()
	page := k.get("/v1/management-logs" + query)
	for _, d := range page["data"].([]any) {
		data = append(data, d.(map[string]any))
	}
	return data, page["has_more"] == true, page["next_cursor"]
}

// TestManagementLogListsEntriesNewestFirst: every entry, newest first,
// by type, page by page.
func TestManagementLogListsEntriesNewestFirst(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	applied := []map[string]any{
		k.planAndApply(envSettings("One"), false, nil),
		k.planAndApply(`{"connections": {"corp": `+databaseConnection("Corp")+`}, "branding": {"primary_color": "#000000"}}`, false, nil),
		k.planAndApply(`{"connections": {"corp": null}}`, false, map[string]any{"confirm_deletions": []any{"connection/corp"}}),
	}

	all, hasMore, next := k.logPage("?limit=100")
	if hasMore || next != nil {
		t.Errorf("has_more %v, next_cursor %v", hasMore, next)
	}
	// Per apply: config.applied and one entry per changed resource.
	type entry struct{ Type, Plan, Key string }
	var got []entry
	for _, l := range all {
		key := ""
		if d, ok := l["data"].(map[string]any)["key"]; ok {
			key = d.(string)
		}
		got = append(got, entry{l["type"].(string), l["plan_id"].(string), key})
		if !config.ValidID(config.PrefixLog, l["id"].(string)) {
			t.Errorf("id %v", l["id"])
		}
	}
	id := func(i int) string { return applied[i]["id"].(string) }
	// Within one apply the entries share a transaction; compare them as sets.
	want := []entry{
		{"config.applied", id(2), ""}, {"connection.deleted", id(2), "corp"},
		{"config.applied", id(1), ""}, {"connection.created", id(1), "corp"}, {"branding.updated", id(1), "default"},
		{"config.applied", id(0), ""}, {"environment_settings.updated", id(0), "default"},
	}
	groups := func(es []entry) map[string]map[entry]bool {
		out := map[string]map[entry]bool{}
		for _, e := range es {
			if out[e.Plan] == nil {
				out[e.Plan] = map[entry]bool{}
			}
			out[e.Plan][e] = true
		}
		return out
	}
	if d := cmp.Diff(groups(want), groups(got)); d != "" || len(got) != len(want) {
		t.Fatalf("entries (-want +got):\n%s", d)
	}
	// Newest first: the entries of the last apply come first.
	for i, e := range got {
		if e.Plan != want[i].Plan {
			t.Errorf("entry %d is of plan %s, want %s (newest first)", i, e.Plan, want[i].Plan)
		}
	}

	// Only config.applied, with the counts, the approvals it counted (none
	// here) and the revision.
	only, _, _ := k.logPage("?type=config.applied")
	if len(only) != 3 {
		t.Fatalf("%d config.applied entries, want 3", len(only))
	}
	wantCounts := []map[string]any{
		{"created": 0.0, "updated": 0.0, "deleted": 1.0, "unchanged": 0.0, "approved_by": []any{}},
		{"created": 1.0, "updated": 1.0, "deleted": 0.0, "unchanged": 0.0, "approved_by": []any{}},
		{"created": 0.0, "updated": 1.0, "deleted": 0.0, "unchanged": 0.0, "approved_by": []any{}},
	}
	for i, l := range only {
		if l["type"] != "config.applied" || l["plan_id"] != id(2-i) || l["revision_id"] != applied[2-i]["revision_id"] {
			t.Errorf("entry %d = %v", i, l)
		}
		if d := cmp.Diff(wantCounts[i], l["data"]); d != "" {
			t.Errorf("counts of entry %d (-want +got):\n%s", i, d)
		}
	}
	if none, _, _ := k.logPage("?type=role.created"); len(none) != 0 {
		t.Errorf("role.created entries: %v", none)
	}

	// Two at a time, the same entries in the same order.
	var paged []map[string]any
	query := "?limit=2"
	for pages := 0; ; pages++ {
		data, more, next := k.logPage(query)
		paged = append(paged, data...)
		if !more {
			if next != nil || pages != 3 {
				t.Errorf("last page: next_cursor %v after %d pages", next, pages+1)
			}
			break
		}
		if len(data) != 2 || next != data[1]["id"] {
			t.Errorf("page of %d entries with next_cursor %v", len(data), next)
		}
		query = fmt.Sprintf("?limit=2&cursor=%s", next)
	}
	if d := cmp.Diff(all, paged); d != "" {
		t.Errorf("paged entries differ from the full list (-all +paged):\n%s", d)
	}
	pagedApplied, more, next := k.logPage("?type=config.applied&limit=2")
	rest, _, _ := k.logPage(fmt.Sprintf("?type=config.applied&limit=2&cursor=%s", next))
	if !more || len(pagedApplied) != 2 || len(rest) != 1 || rest[0]["id"] != only[2]["id"] {
		t.Errorf("config.applied two at a time: %v then %v", pagedApplied, rest)
	}

	for _, bad := range []string{"?limit=0", "?limit=101", "?cursor=nope", "?type=config", "?type=Config.Applied"} {
		r := k.e.Do(apitest.Request{Method: "GET", Path: "/v1/management-logs" + bad})
		assertProblem(t, r, 400, "malformed_request", nil)
	}
}

// TestManagementLogNeedsItsPermission: management-logs:read, and nothing
// else.
func TestManagementLogNeedsItsPermission(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.planAndApply(envSettings("One"), false, nil)
	all := []string{}
	for _, p := range config.AllPermissions() {
		if p != config.PermManagementLogsRead {
			all = append(all, p)
		}
	}
	r := k.e.Do(apitest.Request{Method: "GET", Path: "/v1/management-logs", Secret: k.e.Key(all...)})
	assertProblem(t, r, 403, "insufficient_permissions", nil)
	if d := cmp.Diff([]any{"management-logs:read"}, r.JSON()["required_permissions"]); d != "" {
		t.Errorf("required_permissions (-want +got):\n%s", d)
	}
	r = k.e.Do(apitest.Request{Method: "GET", Path: "/v1/management-logs?type=config.applied", Secret: k.e.Key("management-logs:read")})
	if r.Status != http.StatusOK || len(r.JSON()["data"].([]any)) != 1 {
		t.Errorf("with management-logs:read: %d %s", r.Status, r.Body)
	}
	// Another environment's entries are not listed.
	other := apitest.Setup(t, apitest.Options{Database: k.e.DB, Redis: k.e.Redis, Prefix: k.e.Prefix})
	r = other.Do(apitest.Request{Method: "GET", Path: "/v1/management-logs"})
	if r.Status != http.StatusOK || len(r.JSON()["data"].([]any)) != 0 {
		t.Errorf("another environment's log: %d %s", r.Status, r.Body)
	}
}
