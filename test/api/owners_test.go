package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/test/apitest"
)

// ownedKey creates an API key of the environment for owner, holding perms.
func ownedKey(t *testing.T, e *apitest.Env, owner string, perms ...string) (id, secret string) {
	t.Helper()
	k, err := e.Domain.Keys.CreateOwnedKey(context.Background(), e.EnvID, owner, perms)
	if err != nil {
		t.Fatalf("create key for %q: %v", owner, err)
	}
	return k.ID, k.Secret
}

// TestKeyOwnersAreShownWhereverTheActorIs (§17): the owner given at key
// creation is in GET /v1/api-keys/current, the plan's created_by_owner,
// every event's actor and every management-log entry's actor; a key
// without owner shows null there.
func TestKeyOwnersAreShownWhereverTheActorIs(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	anaID, ana := ownedKey(t, e, "ana@shop.example", config.AllPermissions()...)

	r := e.Do(apitest.Request{Method: "GET", Path: "/v1/api-keys/current", Secret: ana})
	if r.Status != http.StatusOK || r.JSON()["owner"] != "ana@shop.example" || r.JSON()["id"] != anaID {
		t.Fatalf("current key of an owned key: %d %s", r.Status, r.Body)
	}
	r = e.Do(apitest.Request{Method: "GET", Path: "/v1/api-keys/current"})
	if m := r.JSON(); r.Status != http.StatusOK || m["owner"] != nil {
		t.Fatalf("current key without owner: %d %s", r.Status, r.Body)
	} else if _, ok := m["owner"]; !ok {
		t.Fatalf("current key without owner has no owner member: %s", r.Body)
	}

	r = e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Secret: ana,
		Body: map[string]any{"config": map[string]any{"apis": map[string]any{"orders": map[string]any{"display_name": "Orders", "identifier": "https://orders.example", "token_lifetime_seconds": 60}}}}})
	if r.Status != http.StatusCreated {
		t.Fatalf("create plan: %d %s", r.Status, r.Body)
	}
	plan := r.JSON()
	if plan["created_by"] != anaID || plan["created_by_owner"] != "ana@shop.example" {
		t.Fatalf("created_by %v, created_by_owner %v", plan["created_by"], plan["created_by_owner"])
	}
	id := plan["id"].(string)
	if got := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id}).JSON(); got["created_by_owner"] != "ana@shop.example" {
		t.Fatalf("GET: created_by_owner %v", got["created_by_owner"])
	}
	// Applied by the key without owner.
	e.Apply(id, nil)

	var events struct {
		Data []struct {
			Type  string
			Actor map[string]any
		}
	}
	e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id + "/events"}).Decode(t, &events)
	want := map[string]map[string]any{"plan_created": {"api_key_id": anaID, "owner": "ana@shop.example"}}
	for _, ev := range events.Data {
		if w, ok := want[ev.Type]; ok {
			if ev.Actor["api_key_id"] != w["api_key_id"] || ev.Actor["owner"] != w["owner"] {
				t.Errorf("%s: actor %v, want %v", ev.Type, ev.Actor, w)
			}
		} else if _, has := ev.Actor["owner"]; !has || ev.Actor["owner"] != nil {
			t.Errorf("%s by the key without owner: actor %v", ev.Type, ev.Actor)
		}
	}
	if len(events.Data) < 3 {
		t.Fatalf("events: %+v", events.Data)
	}

	// The management log: the apply by a key without owner, then one by ana.
	plan2 := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Secret: ana,
		Body: map[string]any{"config": map[string]any{"apis": map[string]any{"orders": nil}}}}).JSON()
	if r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + plan2["id"].(string) + ":apply", Secret: ana}); r.Status != http.StatusOK {
		t.Fatalf("apply by ana: %d %s", r.Status, r.Body)
	}
	var logs struct {
		Data []struct {
			Type   string
			PlanID string `json:"plan_id"`
			Actor  map[string]any
		}
	}
	e.Do(apitest.Request{Method: "GET", Path: "/v1/management-logs"}).Decode(t, &logs)
	if len(logs.Data) != 4 {
		t.Fatalf("management log: %+v", logs.Data)
	}
	for _, l := range logs.Data {
		if l.PlanID == id && l.Actor["owner"] != nil || l.PlanID != id && l.Actor["owner"] != "ana@shop.example" {
			t.Errorf("%s of %s: actor %v", l.Type, l.PlanID, l.Actor)
		}
	}
}
