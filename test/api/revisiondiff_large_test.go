package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/test/apitest"
)

// TestRevisionDiffOfALargeRevisionOfOneType: the diff of a revision of one
// type with more resources than the diff reads by key (its kind is read
// whole, beside the revision) is the same answer as any other: every
// resource in the revision's order, today's version and spec (null when
// deleted since), the diff from today's spec to the recorded one. Other
// resources of the kind and of other kinds are not in it, and an actor
// without the kind's read permission gets a 403, not the rows read beside.
func TestRevisionDiffOfALargeRevisionOfOneType(t *testing.T) {
	t.Parallel()
	k := newApplyEnv(t, apitest.Options{})
	k.seed() // billing and orders are apis of no revision below
	const n = 230
	apis := func(name string) map[string]any {
		m := map[string]any{}
		for i := range n {
			m[fmt.Sprintf("big-%03d", i)] = map[string]any{"identifier": fmt.Sprintf("https://api.shop.example/big-%d", i),
				"display_name": fmt.Sprintf("Big %d %s", i, name), "scopes": []any{map[string]any{"value": "read:big"}}, "token_lifetime_seconds": 3600}
		}
		return map[string]any{"apis": m}
	}
	created := k.mustApply(k.e.Plan(apis("v1"), false)["id"].(string), nil)["revision_id"].(string)
	v1, _ := k.e.Export()
	updated := k.mustApply(k.e.Plan(apis("v2"), false)["id"].(string), nil)["revision_id"].(string)
	k.planAndApply(`{"apis": {"big-000": null, "big-001": {"identifier": "https://api.shop.example/big-1", "display_name": "Big 1 v3",
	  "scopes": [{"value": "read:big"}], "token_lifetime_seconds": 3600}}}`, false, nil)
	now, _ := k.e.Export()
	before, after := v1["apis"].(map[string]any), now["apis"].(map[string]any)

	versionNow := func(key string) any {
		switch key {
		case "big-000":
			return nil
		case "big-001":
			return 3.0
		}
		return 2.0
	}
	for _, tc := range []struct {
		name, rev string
		want      func(key string) map[string]any
	}{
		{"updated", updated, func(key string) map[string]any {
			r := map[string]any{"kind": "api", "key": key, "version_before": 1.0, "version_now": versionNow(key),
				"spec_before": before[key], "spec_now": after[key]}
			if after[key] == nil {
				r["diff"] = []any{map[string]any{"op": "add", "path": "", "value": before[key]}}
			} else {
				r["diff"] = []any{map[string]any{"op": "replace", "path": "/display_name",
					"old": after[key].(map[string]any)["display_name"], "value": before[key].(map[string]any)["display_name"]}}
			}
			return r
		}},
		{"created", created, func(key string) map[string]any {
			r := map[string]any{"kind": "api", "key": key, "version_before": nil, "version_now": versionNow(key),
				"spec_before": nil, "spec_now": after[key], "diff": []any{}}
			if after[key] != nil {
				r["diff"] = []any{map[string]any{"op": "remove", "path": "", "old": after[key]}}
			}
			return r
		}},
	} {
		got := k.get("/v1/config-revisions/" + tc.rev + "/diff")
		var revOrder []string
		for _, r := range k.get("/v1/config-revisions/" + tc.rev)["resources"].([]any) {
			revOrder = append(revOrder, r.(map[string]any)["key"].(string))
		}
		if len(revOrder) != n {
			t.Fatalf("%s: the revision holds %d resources, want %d", tc.name, len(revOrder), n)
		}
		want := []any{}
		for _, key := range revOrder {
			want = append(want, tc.want(key))
		}
		if d := cmp.Diff(want, got["resources"]); d != "" {
			t.Errorf("%s: resources (-want +got):\n%s", tc.name, d)
		}
	}
	r := k.e.Do(apitest.Request{Method: "GET", Path: "/v1/config-revisions/" + updated + "/diff", Secret: k.e.Key("config:read")})
	assertProblem(t, r, 403, "insufficient_permissions", nil)
	if r := k.e.Do(apitest.Request{Method: "GET", Path: "/v1/config-revisions/" + updated + "/diff", Secret: k.e.Key("config:read", "apis:read")}); r.Status != http.StatusOK {
		t.Errorf("with the permissions of the revision: %d %s", r.Status, r.Body)
	}
}

// TestRevisionDiffOverOneMiBIsStreamedWhole: a diff answer over 1 MiB is
// sent as it is written (chunked, without a Content-Length) over a real
// connection, and is the whole answer: every resource in the revision's
// order with its specs before and now and the one replace between them.
func TestRevisionDiffOverOneMiBIsStreamedWhole(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	const n = 1000
	e.Apply(e.Plan(benchAPIs(n, 0), false)["id"].(string), nil)
	before, _ := e.Export()
	rev := e.Apply(e.Plan(benchAPIs(n, 1), false)["id"].(string), nil)["revision_id"].(string)
	now, _ := e.Export()
	srv := httptest.NewServer(e.Handler)
	t.Cleanup(srv.Close)
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/config-revisions/"+rev+"/diff", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.Secret)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the diff: %d %v %s", resp.StatusCode, err, body)
	}
	if len(body) <= 1<<20 || resp.ContentLength != -1 || len(resp.TransferEncoding) != 1 {
		t.Fatalf("a diff of %d bytes: Content-Length %d, Transfer-Encoding %q; want over 1 MiB, streamed", len(body), resp.ContentLength, resp.TransferEncoding)
	}
	var got struct {
		Object     string           `json:"object"`
		RevisionID string           `json:"revision_id"`
		Resources  []map[string]any `json:"resources"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("the streamed diff is not one JSON value: %v", err)
	}
	if got.Object != "config_revision_diff" || got.RevisionID != rev || len(got.Resources) != n {
		t.Fatalf("diff %q of %q with %d resources, want config_revision_diff of %s with %d", got.Object, got.RevisionID, len(got.Resources), rev, n)
	}
	b, a := before["apis"].(map[string]any), now["apis"].(map[string]any)
	for i, r := range got.Resources {
		key := fmt.Sprintf("r-%05d", i)
		old := a[key].(map[string]any)["scopes"].([]any)[0].(map[string]any)["description"]
		value := b[key].(map[string]any)["scopes"].([]any)[0].(map[string]any)["description"]
		want := map[string]any{"kind": "api", "key": key, "version_before": 1.0, "version_now": 2.0, "spec_before": b[key], "spec_now": a[key],
			"diff": []any{map[string]any{"op": "replace", "path": "/scopes/0/description", "old": old, "value": value}}}
		if d := cmp.Diff(want, r); d != "" {
			t.Fatalf("resource %d (-want +got):\n%s", i, d)
		}
	}
}
