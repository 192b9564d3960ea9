package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/keenauth/configplans/test/apitest"
)

// largeAPIsDocument is a document of n apis of 300 scopes of about 330
// bytes each: about 100 KB a spec, held twice in its plan (spec and diff).
func largeAPIsDocument(prefix string, n int) map[string]any {
	apis := map[string]any{}
	desc := strings.Repeat("d", 256)
	for a := range n {
		scopes := make([]any, 300)
		for i := range scopes {
			scopes[i] = map[string]any{"value": fmt.Sprintf("scope:%060d", i), "description": desc}
		}
		key := fmt.Sprintf("%s-%02d", prefix, a)
		apis[key] = map[string]any{"identifier": "https://api.shop.example/" + key, "display_name": "Big " + key,
			"token_lifetime_seconds": 3600, "scopes": scopes}
	}
	return map[string]any{"apis": apis}
}

// TestLargePlanAnswersAreStreamedAsTheyAreRead: the answers of a plan
// creation and of an apply of a plan over 1 MiB are written as they are
// encoded (no Content-Length), and are the plan as GET reads it; with an
// Idempotency-Key the apply's answer is held (it is stored) and its replay
// is the same bytes.
func TestLargePlanAnswersAreStreamedAsTheyAreRead(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	sameAsGet := func(what string, r *apitest.Response, id string) {
		t.Helper()
		g := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id})
		if g.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", id, g.Status, g.Body)
		}
		var got, want any
		if err := json.Unmarshal(r.Body, &got); err != nil {
			t.Fatalf("%s: the answer is not JSON (%d bytes): %v", what, len(r.Body), err)
		}
		_ = json.Unmarshal(g.Body, &want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the answer (%d bytes) is not the plan GET reads (%d bytes)", what, len(r.Body), len(g.Body))
		}
	}

	for _, keyed := range []bool{false, true} {
		r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{"config": largeAPIsDocument(fmt.Sprint("keyed-", keyed), 13)}})
		if r.Status != http.StatusCreated {
			t.Fatalf("plan: %d %s", r.Status, r.Body)
		}
		if len(r.Body) < 1<<20 || r.Header.Get("Content-Length") != "" || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			t.Errorf("plan creation: %d bytes with Content-Length %q, Content-Type %q; want over 1 MiB, streamed, JSON",
				len(r.Body), r.Header.Get("Content-Length"), r.Header.Get("Content-Type"))
		}
		id, _ := r.JSON()["id"].(string)
		if loc := r.Header.Get("Location"); loc != "/v1/config-plans/"+id {
			t.Errorf("plan creation: Location %q", loc)
		}
		sameAsGet("plan creation", r, id)

		req := apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply", Body: "{}"}
		if keyed {
			req.Header = map[string]string{"Idempotency-Key": "large-apply-" + id}
		}
		a := e.Do(req)
		if a.Status != http.StatusOK || a.JSON()["status"] != "applied" {
			t.Fatalf("apply (keyed %v): %d %.300s", keyed, a.Status, a.Body)
		}
		cl := a.Header.Get("Content-Length")
		if keyed != (cl != "") {
			t.Errorf("apply (keyed %v): Content-Length %q; an answer that is stored is held, the others streamed", keyed, cl)
		}
		sameAsGet(fmt.Sprintf("apply (keyed %v)", keyed), a, id)
		if keyed {
			again := e.Do(req)
			if again.Status != http.StatusOK || again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(a.Body) {
				t.Errorf("replay: %d, Idempotent-Replayed %q, same bytes %v", again.Status, again.Header.Get("Idempotent-Replayed"), string(again.Body) == string(a.Body))
			}
		}
	}
}
