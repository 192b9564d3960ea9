package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/test/apitest"
)

// servedSchema fetches /v1/config-schema.json without a key and compiles it.
func servedSchema(t *testing.T, e *apitest.Env) *jsonschema.Schema {
	t.Helper()
	r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-schema.json", Secret: "-"})
	if r.Status != http.StatusOK {
		t.Fatalf("GET /v1/config-schema.json: %d %s", r.Status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/schema+json" {
		t.Errorf("Content-Type = %q, want application/schema+json", ct)
	}
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q", cc)
	}
	if !bytes.Equal(r.Body, config.ConfigSchema()) {
		t.Fatal("the body is not the schema built from the specs")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.Body))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("config-schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("config-schema.json")
	if err != nil {
		t.Fatalf("the served schema does not compile: %v", err)
	}
	return sch
}

func validates(t *testing.T, sch *jsonschema.Schema, body any) error {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return sch.Validate(v)
}

// An export, as it is, is a plan request the schema accepts: its config and
// versions, and a "$schema" an editor would add.
func TestConfigSchemaIsServedAndAcceptsAnExport(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	sch := servedSchema(t, e)
	doc := apitest.ExampleDocument()
	delete(doc["connections"].(map[string]any), "acme-sso") // no secret to send
	doc["applications"].(map[string]any)["portal"].(map[string]any)["connections"] = []string{"github"}
	e.Apply(e.Plan(doc, false)["id"].(string), map[string]any{})
	cfg, versions := e.Export()
	body := map[string]any{"$schema": "http://example.test/v1/config-schema.json", "config": cfg, "versions": versions, "prune": true}
	if err := validates(t, sch, body); err != nil {
		t.Fatalf("an export does not validate: %v", err)
	}
	cfg["apis"].(map[string]any)["orders"].(map[string]any)["token_lifetime_seconds"] = 59
	if err := validates(t, sch, map[string]any{"config": cfg}); err == nil {
		t.Fatal("a token lifetime out of range validates")
	}
}

// "$schema" at the top of a plan request is ignored; it must be a string.
func TestPlanRequestMayCarryDollarSchema(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{
		"$schema": "https://keenauth.example/v1/config-schema.json", "config": apitest.ExampleDocument()}})
	if r.Status != http.StatusCreated {
		t.Fatalf("plan with $schema: %d %s", r.Status, r.Body)
	}
	r = e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{
		"$schema": 1, "config": apitest.ExampleDocument(), "dry": true}})
	if r.Status != http.StatusBadRequest || r.Code() != "malformed_request" {
		t.Fatalf("$schema 1: %d %s", r.Status, r.Body)
	}
	var p struct {
		Errors []struct{ Pointer, Code string }
	}
	r.Decode(t, &p)
	want := []struct{ Pointer, Code string }{{"/$schema", "malformed_request"}, {"/dry", "unknown_field"}}
	if len(p.Errors) != len(want) || p.Errors[0] != want[0] || p.Errors[1] != want[1] {
		t.Fatalf("errors = %+v, want %+v", p.Errors, want)
	}
}
