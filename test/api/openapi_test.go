package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/service"
	"github.com/keenauth/configplans/test/apitest"
)

func TestOpenAPIDocumentLoadsAndValidatesAs31(t *testing.T) {
	t.Parallel()
	o, err := apitest.LoadOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	if o.Doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q, want 3.1.0", o.Doc.OpenAPI)
	}
}

func TestOpenAPIServedAtV1OpenAPIJSON(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	r := e.Do(apitest.Request{Method: "GET", Path: "/v1/openapi.json", Secret: "-"})
	if r.Status != http.StatusOK {
		t.Fatalf("status = %d %s", r.Status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q", ct)
	}
	if !bytes.Equal(r.Body, service.OpenAPI) {
		t.Fatal("the body is not the embedded document")
	}
	if r.JSON()["openapi"] != "3.1.0" {
		t.Fatalf("openapi = %v", r.JSON()["openapi"])
	}
}

// ginParam is a Gin path parameter (":id"), or a catch-all ("*path").
var ginParam = regexp.MustCompile(`[:*]([A-Za-z_]+)`)

// TestOpenAPIPathsAreExactlyTheRouterRoutes keeps the document and the router
// from drifting: every route has an operation and every operation a route. A
// custom verb ("{id}:apply") is routed by Gin as the whole segment (":id").
func TestOpenAPIPathsAreExactlyTheRouterRoutes(t *testing.T) {
	t.Parallel()
	o, err := apitest.LoadOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	engine := service.New(service.Deps{Metrics: http.NotFoundHandler(), Log: slog.New(slog.DiscardHandler)})
	routes := map[string]bool{}
	for _, r := range engine.Routes() {
		routes[r.Method+" "+ginParam.ReplaceAllString(r.Path, "{$1}")] = true
	}
	documented := map[string]bool{}
	for path, item := range o.Doc.Paths.Map() {
		segs := strings.Split(path, "/")
		for i, s := range segs {
			if strings.HasPrefix(s, "{") {
				segs[i], _, _ = strings.Cut(s, ":")
			}
		}
		for method := range item.Operations() {
			documented[method+" "+strings.Join(segs, "/")] = true
		}
	}
	if diff := cmp.Diff(slices.Sorted(maps.Keys(routes)), slices.Sorted(maps.Keys(documented))); diff != "" {
		t.Fatalf("router routes (-) and documented operations (+) differ:\n%s", diff)
	}
}

// TestOpenAPIValidatorRefusesAnswersThatBreakTheDocument feeds answers that
// break the document to the validator every API test runs, and expects each
// to be refused; the real answers they are made from pass.
func TestOpenAPIValidatorRefusesAnswersThatBreakTheDocument(t *testing.T) {
	t.Parallel()
	o, err := apitest.LoadOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	e := apitest.Setup(t, apitest.Options{})
	plan := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans",
		Body: map[string]any{"config": apitest.ExampleDocument()}})
	if plan.Status != http.StatusCreated {
		t.Fatalf("create plan: %d %s", plan.Status, plan.Body)
	}
	planID := plan.JSON()["id"].(string)
	getPlan := httptest.NewRequest("GET", "/v1/config-plans/"+planID, nil)
	createPlan := httptest.NewRequest("POST", "/v1/config-plans", nil)
	applyPlan := httptest.NewRequest("POST", "/v1/config-plans/"+planID+":apply", nil)
	problem := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/cfgp_01m4qpqtywfs7930tb6kqn5rc5"})
	if problem.Status != http.StatusNotFound {
		t.Fatalf("get unknown plan: %d %s", problem.Status, problem.Body)
	}
	for _, good := range []struct {
		req *http.Request
		r   *apitest.Response
	}{{createPlan, plan}, {getPlan, withStatus(plan, 200)}, {getPlan, problem}} {
		if err := o.CheckResponse(good.req, good.r); err != nil {
			t.Fatalf("a real answer is refused: %v", err)
		}
	}

	// change edits the first change of the given kind in a copy of the plan.
	change := func(kind string, edit func(c map[string]any)) func(m map[string]any) {
		return func(m map[string]any) {
			for _, c := range m["changes"].([]any) {
				if c := c.(map[string]any); c["kind"] == kind {
					edit(c)
					return
				}
			}
			t.Fatalf("the plan has no %s change", kind)
		}
	}
	for _, tc := range []struct {
		name string
		req  *http.Request
		r    *apitest.Response
		want string // in the error
	}{
		{"id of the wrong type", getPlan, editJSON(t, withStatus(plan, 200), func(m map[string]any) { m["id"] = 1 }), "id"},
		{"undocumented member", getPlan, editJSON(t, withStatus(plan, 200), func(m map[string]any) { m["secret"] = "x" }), "secret"},
		{"missing member", getPlan, editJSON(t, withStatus(plan, 200), func(m map[string]any) { delete(m, "summary") }), "summary"},
		{"timestamp without milliseconds", getPlan, editJSON(t, withStatus(plan, 200), func(m map[string]any) {
			m["created_at"] = "2026-01-02T03:04:05Z"
		}), "created_at"},
		{"resource_id missing on a connection change", getPlan, editJSON(t, withStatus(plan, 200),
			change("connection", func(c map[string]any) { delete(c, "resource_id") })), "resource_id"},
		{"resource_id on an api change", getPlan, editJSON(t, withStatus(plan, 200),
			change("api", func(c map[string]any) { c["resource_id"] = nil })), "resource_id"},
		{"spec of another kind", getPlan, editJSON(t, withStatus(plan, 200),
			change("api", func(c map[string]any) { c["spec"] = map[string]any{"primary_color": "#000000"} })), "spec"},
		{"delete with a spec", getPlan, editJSON(t, withStatus(plan, 200),
			change("api", func(c map[string]any) { c["action"], c["base_version"] = "delete", 1 })), "spec"},
		{"replace without old", getPlan, editJSON(t, withStatus(plan, 200), change("environment_settings", func(c map[string]any) {
			delete(c["diff"].([]any)[0].(map[string]any), "old")
		})), "old"},
		{"remove without old", getPlan, editJSON(t, withStatus(plan, 200), change("environment_settings", func(c map[string]any) {
			op := c["diff"].([]any)[0].(map[string]any)
			op["op"] = "remove"
			delete(op, "old")
			delete(op, "value")
		})), "old"},
		{"add with old", getPlan, editJSON(t, withStatus(plan, 200), change("api", func(c map[string]any) {
			c["diff"].([]any)[0].(map[string]any)["old"] = nil
		})), "old"},
		{"undocumented status", getPlan, withStatus(plan, http.StatusTeapot), "status is not supported"},
		{"no Request-Id", getPlan, withoutHeader(withStatus(plan, 200), "Request-Id"), "Request-Id"},
		{"no Cache-Control", getPlan, withoutHeader(withStatus(plan, 200), "Cache-Control"), "Cache-Control"},
		{"no Location on a created plan", createPlan, withoutHeader(plan, "Location"), "Location"},
		{"success as problem+json", getPlan, withHeader(withStatus(plan, 200), "Content-Type", "application/problem+json"), "Content-Type"},
		{"problem as application/json", getPlan, withHeader(problem, "Content-Type", "application/json"), "Content-Type"},
		{"problem whose code is not its status's", getPlan, editJSON(t, problem, func(m map[string]any) { m["code"] = "conflict" }), "code"},
		{"problem with an unknown code", getPlan, editJSON(t, problem, func(m map[string]any) { m["code"] = "oops" }), "code"},
		{"problem with an undocumented member", getPlan, editJSON(t, problem, func(m map[string]any) { m["hint"] = "x" }), "hint"},
		{"forbidden without required_permissions", getPlan, editJSON(t, withStatus(problem, 403), func(m map[string]any) {
			m["status"], m["code"] = 403, "insufficient_permissions"
		}), "required_permissions"},
		{"rate limited without Retry-After", applyPlan, editJSON(t, withStatus(problem, 429), func(m map[string]any) {
			m["status"], m["code"], m["retry_after"], m["policy"] = 429, "rate_limited", 2, "config_plan"
		}), "Retry-After"},
		{"Retry-After that is not seconds", applyPlan, withHeader(editJSON(t, withStatus(problem, 429), func(m map[string]any) {
			m["status"], m["code"], m["retry_after"], m["policy"] = 429, "rate_limited", 2, "config_plan"
		}), "Retry-After", "soon"), "Retry-After"},
		{"unknown path answering 200", httptest.NewRequest("GET", "/v1/nope", nil), withStatus(plan, 200), "no such operation"},
		{"unknown method answering 200", httptest.NewRequest("DELETE", "/v1/config-plans/"+planID, nil), withStatus(plan, 200), "no such operation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := o.CheckResponse(tc.req, tc.r)
			if err == nil {
				t.Fatalf("the validator accepted %d %s", tc.r.Status, tc.r.Body)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error does not mention %q: %v", tc.want, err)
			}
		})
	}
}

// withStatus copies r with another status.
func withStatus(r *apitest.Response, status int) *apitest.Response {
	return &apitest.Response{Status: status, Header: r.Header.Clone(), Body: slices.Clone(r.Body)}
}

func withHeader(r *apitest.Response, name, value string) *apitest.Response {
	out := withStatus(r, r.Status)
	out.Header.Set(name, value)
	return out
}

func withoutHeader(r *apitest.Response, name string) *apitest.Response {
	out := withStatus(r, r.Status)
	out.Header.Del(name)
	return out
}

// editJSON copies r with its JSON body edited.
func editJSON(t *testing.T, r *apitest.Response, edit func(m map[string]any)) *apitest.Response {
	t.Helper()
	out := withStatus(r, r.Status)
	m := out.JSON()
	if m == nil {
		t.Fatalf("not a JSON object: %s", r.Body)
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out.Body = b
	return out
}

// TestOpenAPIDescribesARealAnswerOfEveryOperation sends, through the
// harness that checks every answer against the document, a request to every
// operation: a success and typical refusals. Each status is asserted so that
// the answer checked is the one meant.
func TestOpenAPIDescribesARealAnswerOfEveryOperation(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	internal := map[string]string{"Authorization": "Bearer " + apitest.InternalToken}
	do := func(want int, r apitest.Request) *apitest.Response {
		t.Helper()
		resp := e.Do(r)
		if resp.Status != want {
			t.Fatalf("%s %s: %d, want %d: %s", r.Method, r.Path, resp.Status, want, resp.Body)
		}
		return resp
	}

	do(200, apitest.Request{Method: "GET", Path: "/healthz", Secret: "-"})
	do(200, apitest.Request{Method: "GET", Path: "/readyz", Secret: "-"})
	do(301, apitest.Request{Method: "GET", Path: "/console", Secret: "-"})
	do(200, apitest.Request{Method: "GET", Path: "/console/", Secret: "-"})
	do(200, apitest.Request{Method: "GET", Path: "/console/plans/cfgp_01m4qpqtywfs7930tb6kqn5rc5", Secret: "-"})
	do(200, apitest.Request{Method: "GET", Path: "/console/assets/app.js", Secret: "-"})
	do(404, apitest.Request{Method: "GET", Path: "/console/assets/nope.js", Secret: "-"})
	do(404, apitest.Request{Method: "GET", Path: "/v1/nope"})
	do(405, apitest.Request{Method: "DELETE", Path: "/v1/config"})
	do(401, apitest.Request{Method: "GET", Path: "/v1/config", Secret: "-"})
	do(200, apitest.Request{Method: "GET", Path: "/v1/config"})
	do(400, apitest.Request{Method: "GET", Path: "/v1/config?types=nope"})
	do(403, apitest.Request{Method: "GET", Path: "/v1/config", Secret: e.Key("config:read")})
	do(200, apitest.Request{Method: "GET", Path: "/v1/api-keys/current"})
	do(200, apitest.Request{Method: "GET", Path: "/v1/api-keys/current", Secret: e.Key()})
	do(401, apitest.Request{Method: "GET", Path: "/v1/api-keys/current", Secret: "-"})

	// A plan of the §4 example (with a no_op deletion), applied.
	do(422, apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{"config": map[string]any{}}})
	do(400, apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{"config": map[string]any{}, "extra": 1}})
	plan := do(201, apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{"config": apitest.ExampleDocument()},
		Header: map[string]string{"Idempotency-Key": "openapi-plan"}})
	replay := do(201, apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{"config": apitest.ExampleDocument()},
		Header: map[string]string{"Idempotency-Key": "openapi-plan"}})
	if replay.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatal("the retry was not a replay")
	}
	do(422, apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{"config": apitest.ExampleDocument(), "prune": true},
		Header: map[string]string{"Idempotency-Key": "openapi-plan"}})
	id := plan.JSON()["id"].(string)
	do(200, apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id})
	do(404, apitest.Request{Method: "GET", Path: "/v1/config-plans/cfgp_01m4qpqtywfs7930tb6kqn5rc5"})
	do(404, apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":frobnicate"})
	do(200, apitest.Request{Method: "GET", Path: "/v1/config-plans?status=planned"})
	do(400, apitest.Request{Method: "GET", Path: "/v1/config-plans?limit=0"})
	secrets := map[string]any{"resolved_secrets": map[string]any{"KEENAUTH_CONNECTION_ACME_SSO_CLIENT_SECRET": "s3cret"},
		"sp_host": "login.shop.example"}
	do(422, apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply", Body: map[string]any{}})
	do(200, apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply?validate_only=true", Body: secrets})
	applied := do(200, apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply", Body: secrets})
	nap := do(409, apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply", Body: secrets})
	if nap.JSON()["plan_status"] != "applied" {
		t.Fatalf("plan_status = %v", nap.JSON()["plan_status"])
	}
	do(200, apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id + "/events"})

	// Revisions, the management log and a restore.
	rev := applied.JSON()["revision_id"].(string)
	do(200, apitest.Request{Method: "GET", Path: "/v1/config-revisions"})
	do(200, apitest.Request{Method: "GET", Path: "/v1/config-revisions/" + rev})
	do(404, apitest.Request{Method: "GET", Path: "/v1/config-revisions/cfgr_01m4qpqtywfs7930tb6kqn5rc5"})
	do(200, apitest.Request{Method: "GET", Path: "/v1/config-revisions/" + rev + "/diff"})
	do(404, apitest.Request{Method: "GET", Path: "/v1/config-revisions/cfgr_01m4qpqtywfs7930tb6kqn5rc5/diff"})
	do(403, apitest.Request{Method: "GET", Path: "/v1/config-revisions/" + rev + "/diff", Secret: e.Key("config:read")})
	do(200, apitest.Request{Method: "GET", Path: "/v1/management-logs"})
	do(200, apitest.Request{Method: "GET", Path: "/v1/management-logs?type=connection.created"})
	restored := do(201, apitest.Request{Method: "POST", Path: "/v1/config-revisions/" + rev + ":restore"})
	// A rebase of the restore plan, and of the applied plan (refused).
	do(201, apitest.Request{Method: "POST", Path: "/v1/config-plans/" + restored.JSON()["id"].(string) + ":rebase"})
	do(409, apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":rebase"})
	do(400, apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":rebase", Body: map[string]any{"x": 1}})
	do(400, apitest.Request{Method: "POST", Path: "/v1/config-revisions/" + rev + ":restore", Body: map[string]any{"x": 1}})

	// Connection tests: a success, a failure, and the refusals.
	do(200, apitest.Request{Method: "POST", Path: "/v1/connections/acme-sso:test"})
	conID := ""
	for _, c := range applied.JSON()["changes"].([]any) {
		if c := c.(map[string]any); c["key"] == "acme-sso" {
			conID, _ = c["resource_id"].(string)
		}
	}
	if conID == "" {
		t.Fatal("the applied plan's connection create has no resource_id")
	}
	e.Fed.TestResult(e.EnvID, conID, false, "the issuer did not answer")
	do(200, apitest.Request{Method: "POST", Path: "/v1/connections/acme-sso:test"})
	do(409, apitest.Request{Method: "POST", Path: "/v1/connections/github:test"})
	do(404, apitest.Request{Method: "POST", Path: "/v1/connections/nope:test"})

	// A protected deletion left unconfirmed, and a key without the permissions.
	cfg, _ := e.Export()
	cfg["connections"].(map[string]any)["github"] = nil
	del := do(201, apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{"config": map[string]any{"connections": cfg["connections"]}}})
	delID := del.JSON()["id"].(string)
	do(403, apitest.Request{Method: "POST", Path: "/v1/config-plans/" + delID + ":apply", Secret: e.Key("config:write")})
	do(409, apitest.Request{Method: "POST", Path: "/v1/config-plans/" + delID + ":apply"})
	do(200, apitest.Request{Method: "POST", Path: "/v1/config-plans/" + delID + ":apply",
		Body: map[string]any{"confirm_deletions": []string{"connection/github"}}})

	// The internal endpoints.
	do(401, apitest.Request{Method: "POST", Path: "/internal/v1/token-activity", Secret: "-", Body: map[string]any{}})
	do(204, apitest.Request{Method: "POST", Path: "/internal/v1/token-activity", Secret: "-", Header: internal,
		Body: map[string]any{"environment_id": e.EnvID, "application_key": "portal", "issued_at": "2026-01-02T03:04:05Z"}})
	do(422, apitest.Request{Method: "POST", Path: "/internal/v1/token-activity", Secret: "-", Header: internal,
		Body: map[string]any{"environment_id": "env_x", "application_key": "portal", "issued_at": "2026-01-02T03:04:05Z"}})
	do(200, apitest.Request{Method: "PUT", Path: "/internal/v1/environments/" + e.EnvID + "/policies", Secret: "-", Header: internal,
		Body: map[string]any{"min_password_length": 10}})
	do(404, apitest.Request{Method: "PUT", Path: "/internal/v1/environments/env_01m4qpqtywfs7930tb6kqn5rc5/policies", Secret: "-", Header: internal,
		Body: map[string]any{}})
}

func TestOpenAPIRouteMatchesCustomVerbsAfterAParameter(t *testing.T) {
	t.Parallel()
	o, err := apitest.LoadOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, path string
		template     string // "" when no operation matches
		params       map[string]string
	}{
		{"POST", "/v1/config-plans/cfgp_1:apply", "/v1/config-plans/{id}:apply", map[string]string{"id": "cfgp_1"}},
		{"GET", "/v1/config-plans/cfgp_1", "/v1/config-plans/{id}", map[string]string{"id": "cfgp_1"}},
		{"GET", "/v1/config-plans/cfgp_1:apply", "/v1/config-plans/{id}", map[string]string{"id": "cfgp_1:apply"}},
		{"GET", "/v1/config-plans/cfgp_1/events", "/v1/config-plans/{id}/events", map[string]string{"id": "cfgp_1"}},
		{"POST", "/v1/config-revisions/cfgr_1:restore", "/v1/config-revisions/{id}:restore", map[string]string{"id": "cfgr_1"}},
		{"POST", "/v1/connections/acme-sso:test", "/v1/connections/{key}:test", map[string]string{"key": "acme-sso"}},
		{"PUT", "/internal/v1/environments/env_1/policies", "/internal/v1/environments/{id}/policies", map[string]string{"id": "env_1"}},
		{"POST", "/v1/config-plans/cfgp_1", "", nil},
		{"POST", "/v1/config-plans/cfgp_1:frobnicate", "", nil},
		{"POST", "/v1/config-plans/a:b:apply", "", nil},
		{"POST", "/v1/config-plans/:apply", "", nil},
		{"GET", "/v1/nope", "", nil},
	} {
		route, params := o.Route(tc.method, tc.path)
		got := ""
		if route != nil {
			got = route.Path
		}
		if got != tc.template || !maps.Equal(params, tc.params) {
			t.Errorf("%s %s -> %q %v, want %q %v", tc.method, tc.path, got, params, tc.template, tc.params)
		}
	}
}

// TestOpenAPIDescribesTheAnswersOfADrainingServer: while the process shuts
// down, every path but the probes answers the documented 503.
func TestOpenAPIDescribesTheAnswersOfADrainingServer(t *testing.T) {
	t.Parallel()
	h := service.New(service.Deps{Draining: func() bool { return true }, Log: slog.New(slog.DiscardHandler)})
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/healthz", 200},
		{"GET", "/readyz", 503},
		{"GET", "/v1/openapi.json", 503},
		{"GET", "/v1/config", 503},
		{"POST", "/v1/config-plans/cfgp_01m4qpqtywfs7930tb6kqn5rc5:apply", 503},
		{"POST", "/internal/v1/token-activity", 503},
		{"GET", "/v1/nope", 503},
		{"GET", "/nope", 503},
	} {
		req := httptest.NewRequest(tc.method, tc.path, nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		r := &apitest.Response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
		if r.Status != tc.want {
			t.Errorf("%s %s: %d, want %d: %s", tc.method, tc.path, r.Status, tc.want, r.Body)
			continue
		}
		apitest.ValidateResponse(t, req, r)
	}
}

// TestOpenAPIDocumentsEveryErrorCodeAtItsStatus reads the one error → status
// table of the server (service.Statuses) and checks that the document's
// ErrorCode enum is exactly its codes and that each code is documented by a
// problem response of its status.
func TestOpenAPIDocumentsEveryErrorCodeAtItsStatus(t *testing.T) {
	t.Parallel()
	o, err := apitest.LoadOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	server := map[string]int{}
	for code, status := range service.Statuses() {
		server[string(code)] = status
	}
	if len(server) < 20 {
		t.Fatalf("read only %d codes from service.Statuses", len(server))
	}

	var enum []string
	for _, v := range o.Doc.Components.Schemas["ErrorCode"].Value.Enum {
		enum = append(enum, v.(string))
	}
	if d := cmp.Diff(slices.Sorted(maps.Keys(server)), slices.Sorted(slices.Values(enum))); d != "" {
		t.Errorf("server codes (-) and the document's ErrorCode (+) differ:\n%s", d)
	}

	// Every problem response of the document: status → codes it lists.
	documented := map[int]map[string]bool{}
	collect := func(status string, resp *openapi3.Response) {
		mt := resp.Content.Get("application/problem+json")
		if mt == nil {
			return
		}
		var n int
		if _, err := fmt.Sscan(status, &n); err != nil {
			t.Fatalf("status %q", status)
		}
		for _, part := range mt.Schema.Value.AllOf {
			if part.Ref != "" {
				continue // the Problem schema itself lists every code
			}
			if c := part.Value.Properties["code"]; c != nil {
				for _, v := range c.Value.Enum {
					if documented[n] == nil {
						documented[n] = map[string]bool{}
					}
					documented[n][v.(string)] = true
				}
			}
		}
	}
	for _, item := range o.Doc.Paths.Map() {
		for _, op := range item.Operations() {
			for status, resp := range op.Responses.Map() {
				collect(status, resp.Value)
			}
		}
	}
	collect("405", o.Doc.Components.Responses["MethodNotAllowed"].Value)
	collect("431", o.Doc.Components.Responses["RequestHeadersTooLarge"].Value)
	for code, status := range server {
		if !documented[status][code] {
			t.Errorf("%s (%d) is not documented by any %d problem response", code, status, status)
		}
	}
	for status, cs := range documented {
		for code := range cs {
			if server[code] != status {
				t.Errorf("the document lists %s under %d; the server answers it with %d", code, status, server[code])
			}
		}
	}
}
