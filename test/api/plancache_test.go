package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/keenauth/configplans/federation"
	"github.com/keenauth/configplans/test/apitest"
)

// TestPlanReadByItsCreatorIsThePlanStored: a plan read again by the process
// that created it, its changes kept in that process (changesCache), is the
// plan another process reads from the database, byte for byte: creates,
// updates and deletions of connections and apis. Once the other process
// has applied it, giving the created connection its id, the creator reads
// the plan as stored, the id included. A plan created and applied by one
// process is applied from the changes kept, and answered as stored. The
// counts of keenauthd_plan_reads_total{changes} say where each read's
// changes came from.
func TestPlanReadByItsCreatorIsThePlanStored(t *testing.T) {
	t.Parallel()
	if apitest.Backend() == apitest.BackendEmbedded {
		t.Skip("needs PostgreSQL/Redis: two processes over one database")
	}
	k := newApplyEnv(t, apitest.Options{Metrics: true})
	other := apitest.Setup(t, apitest.Options{Replica: k.e, Metrics: true})
	k.seed()
	reads := func(e *apitest.Env) (cache, database float64) {
		f := scrape(t, e)
		return sample(f, "keenauthd_plan_reads_total", map[string]string{"changes": "cache"}),
			sample(f, "keenauthd_plan_reads_total", map[string]string{"changes": "database"})
	}
	// moved fails the test unless e's reads moved by cache and database
	// since (c0, d0).
	moved := func(what string, e *apitest.Env, c0, d0, cache, database float64) {
		t.Helper()
		if c, d := reads(e); c-c0 != cache || d-d0 != database {
			t.Errorf("%s: reads from the cache moved by %v, from the database by %v; want %v and %v", what, c-c0, d-d0, cache, database)
		}
	}
	get := func(e *apitest.Env, id string) []byte {
		t.Helper()
		r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id})
		if r.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", id, r.Status, r.Body)
		}
		return r.Body
	}
	same := func(what string, a, b []byte) {
		t.Helper()
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the creator reads\n%s\nthe other process reads\n%s", what, a, b)
		}
	}

	id := k.planID(`{"connections": {"db-new": `+databaseConnection("New DB")+`, "github": null, "db-main": `+databaseConnection("Main DB 2")+`},
		"apis": {"billing": null, "orders": {"identifier": "https://api.shop.example/orders", "display_name": "Orders 2",
			"scopes": [{"value": "read:orders", "description": "Read \"orders\" ✓"}], "token_lifetime_seconds": 7200}}}`, false)
	c0, d0 := reads(k.e)
	oc0, od0 := reads(other)
	same("planned", get(k.e, id), get(other, id))
	moved("the creator's read of its plan", k.e, c0, d0, 1, 0)
	moved("the other process's read", other, oc0, od0, 0, 1)

	other.Apply(id, map[string]any{"confirm_deletions": []string{"connection/github"}})
	c0, d0 = reads(k.e)
	applied := get(k.e, id)
	same("applied by the other process", applied, get(other, id))
	moved("the creator's read once applied elsewhere", k.e, c0, d0, 0, 1)
	var p struct {
		Changes []struct {
			Kind       string          `json:"kind"`
			Key        string          `json:"key"`
			ResourceID json.RawMessage `json:"resource_id"`
		} `json:"changes"`
	}
	if err := json.Unmarshal(applied, &p); err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Changes {
		if c.Kind == "connection" && c.Key == "db-new" && (len(c.ResourceID) < 2 || c.ResourceID[0] != '"') {
			t.Errorf("the created connection's change shows resource_id %s, want its new id", c.ResourceID)
		}
	}

	id = k.planID(envSettings("Kept"), false)
	c0, d0 = reads(k.e)
	answer := k.mustApply(id, nil)
	moved("the creator's apply", k.e, c0, d0, 1, 0)
	var want map[string]any
	if err := json.Unmarshal(get(other, id), &want); err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(answer["changes"]); !bytes.Equal(got, encodeJSON(t, want["changes"])) {
		t.Errorf("the apply's answer shows the changes\n%s\nstored are\n%s", got, encodeJSON(t, want["changes"]))
	}
	c0, d0 = reads(k.e)
	get(k.e, id)
	moved("the creator's read of the plan it applied", k.e, c0, d0, 0, 1)
}

// TestPlanReleasedAfterItsConnectionsGotIdsIsReadAsStored: a plan of a
// new connection with OIDC material, created by one process and applied by
// another whose federation service refuses the material, is planned again
// with its change showing the connection's new id (§5); the creator, which
// kept the changes as they were planned, reads the plan as stored.
func TestPlanReleasedAfterItsConnectionsGotIdsIsReadAsStored(t *testing.T) {
	t.Parallel()
	if apitest.Backend() == apitest.BackendEmbedded {
		t.Skip("needs PostgreSQL/Redis: two processes over one database")
	}
	e := apitest.Setup(t, apitest.Options{})
	other := apitest.Setup(t, apitest.Options{Replica: e})
	id := e.Plan(connDoc(map[string]any{"acme-sso": oidcConn("ACME", false, "abc")}), false)["id"].(string)
	if got := secPlan(t, e, id); secChangeID(t, got, "acme-sso") != "null" {
		t.Fatalf("the planned change shows resource_id %s", secChangeID(t, got, "acme-sso"))
	}
	other.Fed.Next(1).Reject(federation.FieldError{Pointer: "/issuer", Code: "invalid"})
	if r := secApply(other, id, applyBody("acme-sso", secSecret)); r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("apply with the material refused: %d %s", r.Status, r.Body)
	}
	mine, theirs := secPlan(t, e, id), secPlan(t, other, id)
	if mine["status"] != "planned" || secChangeID(t, mine, "acme-sso") == "null" {
		t.Errorf("the creator reads status %v, resource_id %s; want planned and the new id", mine["status"], secChangeID(t, mine, "acme-sso"))
	}
	if a, b := encodeJSON(t, mine), encodeJSON(t, theirs); !bytes.Equal(a, b) {
		t.Errorf("the creator reads\n%s\nthe other process reads\n%s", a, b)
	}
}

// secChangeID is the resource_id of the change of the connection key in
// the plan p, as JSON text.
func secChangeID(t *testing.T, p map[string]any, key string) string {
	t.Helper()
	for _, c := range p["changes"].([]any) {
		if c := c.(map[string]any); c["kind"] == "connection" && c["key"] == key {
			return string(encodeJSON(t, c["resource_id"]))
		}
	}
	t.Fatalf("no change of connection %s in %v", key, p["changes"])
	return ""
}
