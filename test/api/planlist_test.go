package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/test/apitest"
)

// listAllPlans follows the cursors of GET /v1/config-plans with limit and
// query, and returns the ids in order; it checks has_more and next_cursor
// on every page.
func listAllPlans(t *testing.T, e *apitest.Env, secret, query string, limit int) []string {
	t.Helper()
	ids := []string{}
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 50 {
			t.Fatal("more than 50 pages")
		}
		q := url.Values{"limit": {fmt.Sprint(limit)}}
		if query != "" {
			extra, _ := url.ParseQuery(query)
			for k, v := range extra {
				q[k] = v
			}
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans?" + q.Encode(), Secret: secret})
		if r.Status != http.StatusOK {
			t.Fatalf("list plans: %d %s", r.Status, r.Body)
		}
		var p struct {
			Data       []map[string]any `json:"data"`
			HasMore    bool             `json:"has_more"`
			NextCursor *string          `json:"next_cursor"`
		}
		r.Decode(t, &p)
		if len(p.Data) > limit {
			t.Fatalf("page of %d plans with limit %d", len(p.Data), limit)
		}
		for _, d := range p.Data {
			ids = append(ids, d["id"].(string))
		}
		if !p.HasMore {
			if p.NextCursor != nil {
				t.Errorf("has_more false with next_cursor %q", *p.NextCursor)
			}
			return ids
		}
		if len(p.Data) != limit || p.NextCursor == nil || *p.NextCursor != ids[len(ids)-1] {
			t.Fatalf("has_more with %d plans (limit %d) and next_cursor %v", len(p.Data), limit, p.NextCursor)
		}
		cursor = *p.NextCursor
	}
}

func TestPlanListShowsAKeyOnlyThePlansWhoseEveryTypeItReads(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	conn := func(i int) string {
		return fmt.Sprintf(`{"connections": {"c-%d": {"type": "database", "display_name": "C %d", "active": true,
			"database": {"requires_username": false}}}}`, i, i)
	}
	api := func(i int) string {
		return fmt.Sprintf(`{"apis": {"a-%d": {"identifier": "https://api.shop.example/%d", "display_name": "A", "token_lifetime_seconds": 60}}}`, i, i)
	}
	both := func(i int) string {
		return fmt.Sprintf(`{"connections": {"b-%d": {"type": "database", "display_name": "B %d", "active": true,
			"database": {"requires_username": false}}},
			"apis": {"b-%d": {"identifier": "https://api.shop.example/b/%d", "display_name": "B", "token_lifetime_seconds": 60}}}`, i, i, i, i)
	}
	// Interleaved, so that the plans of one key are spread among the others.
	docs := []string{conn(0), api(0), both(0), api(1), api(2), conn(1), both(1), `{"roles": {"r": {"display_name": "R"}}}`,
		api(3), conn(2), api(4), api(5), both(2), conn(3), api(6)}
	var all, connections []string // newest first
	for _, d := range docs {
		id := e.Plan(docOf(t, d), false)["id"].(string)
		all = slices.Insert(all, 0, id)
		if d[:16] == `{"connections": ` && !slices.Contains([]string{both(0), both(1), both(2)}, d) {
			connections = slices.Insert(connections, 0, id)
		}
	}
	if len(connections) != 4 {
		t.Fatalf("%d connection plans, want 4", len(connections))
	}
	connKey := e.Key(config.PermConfigRead, "connections:read")
	for _, limit := range []int{1, 2, 3, 100} {
		t.Run(fmt.Sprintf("connections:read, limit %d", limit), func(t *testing.T) {
			if diff := cmp.Diff(connections, listAllPlans(t, e, connKey, "", limit)); diff != "" {
				t.Errorf("plans listed (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("every permission", func(t *testing.T) {
		if diff := cmp.Diff(all, listAllPlans(t, e, "", "", 4)); diff != "" {
			t.Errorf("plans listed (-want +got):\n%s", diff)
		}
	})
	t.Run("a key that reads none of the plans' types", func(t *testing.T) {
		key := e.Key(config.PermConfigRead, "identity-settings:read")
		if got := listAllPlans(t, e, key, "", 1); len(got) != 0 {
			t.Errorf("plans listed: %v, want none", got)
		}
	})
	t.Run("both types of a plan", func(t *testing.T) {
		key := e.Key(config.PermConfigRead, "connections:read", "apis:read")
		role := all[len(docs)-1-7] // every plan but the role plan
		want := slices.DeleteFunc(slices.Clone(all), func(id string) bool { return id == role })
		if diff := cmp.Diff(want, listAllPlans(t, e, key, "", 2)); diff != "" {
			t.Errorf("plans listed (-want +got):\n%s", diff)
		}
	})

	// With the status filter: the oldest connection plan applied, which
	// makes the next one applied conflicted; the two others stay planned,
	// then expire.
	e.Apply(connections[3], nil)
	if r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + connections[1] + ":apply"}); r.Code() != "config_conflict" {
		t.Fatalf("apply of a plan older than the last write: %d %s", r.Status, r.Body)
	}
	for _, tt := range []struct {
		status string
		want   []string
	}{
		{"applied", []string{connections[3]}},
		{"conflicted", []string{connections[1]}},
		{"planned", []string{connections[0], connections[2]}},
		{"applying", []string{}},
		{"expired", []string{}},
	} {
		for _, limit := range []int{1, 2} {
			t.Run(fmt.Sprintf("status %s, limit %d", tt.status, limit), func(t *testing.T) {
				if diff := cmp.Diff(tt.want, listAllPlans(t, e, connKey, "status="+tt.status, limit)); diff != "" {
					t.Errorf("plans listed (-want +got):\n%s", diff)
				}
			})
		}
	}

	// The plans the key cannot see are not even decoded: spoilt, they do
	// not fail its list.
	if err := e.GormDB().Exec(`UPDATE config_plans SET summary = '"spoilt"' WHERE environment_id = ? AND type_set <> 'connection'`,
		e.EnvID).Error; err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(connections, listAllPlans(t, e, connKey, "", 1)); diff != "" {
		t.Errorf("plans listed once the others are spoilt (-want +got):\n%s", diff)
	}

	e.Clock.Advance(25 * time.Hour)
	for _, limit := range []int{1, 2} {
		t.Run(fmt.Sprintf("status expired after the validity, limit %d", limit), func(t *testing.T) {
			if diff := cmp.Diff([]string{connections[0], connections[2]}, listAllPlans(t, e, connKey, "status=expired", limit)); diff != "" {
				t.Errorf("plans listed (-want +got):\n%s", diff)
			}
			if got := listAllPlans(t, e, connKey, "status=planned", limit); len(got) != 0 {
				t.Errorf("planned plans listed: %v, want none", got)
			}
		})
	}
}

// TestPlanListAnswersALargePlanAsItsGet: plans whose changes are over
// 1 MiB are listed with their changes (read apart from their rows on
// PostgreSQL), each the very bytes its GET answers, on every page size:
// whether the large plan is on the page or the one read after it to tell
// that there are more.
func TestPlanListAnswersALargePlanAsItsGet(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	large := func(name string) map[string]any {
		apis := map[string]any{}
		for i := range 200 {
			var scopes []any
			for j := range 20 {
				scopes = append(scopes, map[string]any{"value": fmt.Sprintf("read:%s-%d", name, j),
					"description": fmt.Sprintf("%s é ✓ %d %s", name, j, strings.Repeat("d", 200))})
			}
			apis[fmt.Sprintf("%s-%03d", name, i)] = map[string]any{"identifier": fmt.Sprintf("https://api.shop.example/%s/%d", name, i),
				"display_name": "Large " + name, "scopes": scopes, "token_lifetime_seconds": 60}
		}
		return map[string]any{"apis": apis}
	}
	var ids []string // newest first
	for _, doc := range []map[string]any{large("a"), docOf(t, `{"roles": {"r": {"display_name": "R"}}}`), large("c"), large("d")} {
		ids = slices.Insert(ids, 0, e.Plan(doc, false)["id"].(string))
	}
	gets := map[string]string{}
	for _, id := range ids {
		r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id})
		if r.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", id, r.Status, r.Body)
		}
		gets[id] = string(r.Body)
	}
	if n := len(gets[ids[0]]); n < 3<<19 {
		t.Fatalf("the large plan's answer is %d bytes: its changes are not over 1 MiB", n)
	}
	for _, limit := range []int{1, 2, 3, 10} {
		var listed []string
		cursor := ""
		for {
			path := fmt.Sprintf("/v1/config-plans?limit=%d", limit)
			if cursor != "" {
				path += "&cursor=" + cursor
			}
			r := e.Do(apitest.Request{Method: "GET", Path: path})
			if r.Status != http.StatusOK {
				t.Fatalf("list, limit %d: %d %s", limit, r.Status, r.Body)
			}
			var pg struct {
				Data       []json.RawMessage `json:"data"`
				NextCursor *string           `json:"next_cursor"`
			}
			r.Decode(t, &pg)
			for _, p := range pg.Data {
				var head struct {
					ID string `json:"id"`
				}
				if err := json.Unmarshal(p, &head); err != nil {
					t.Fatal(err)
				}
				listed = append(listed, head.ID)
				if string(p) != gets[head.ID] {
					t.Errorf("limit %d: plan %s listed as %d bytes, its GET answers %d bytes", limit, head.ID, len(p), len(gets[head.ID]))
				}
			}
			if pg.NextCursor == nil {
				break
			}
			cursor = *pg.NextCursor
		}
		if diff := cmp.Diff(ids, listed); diff != "" {
			t.Errorf("limit %d: plans listed (-want +got):\n%s", limit, diff)
		}
	}
}
