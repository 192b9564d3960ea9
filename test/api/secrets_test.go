package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/test/apitest"
)

// Fixtures of the secret, federation and canary tests.

const (
	secHost   = "login.shop.example"
	secSecret = "client-secret-1"
)

// oidcConn is an enterprise connection spec with OIDC material.
func oidcConn(name string, active bool, clientID string) map[string]any {
	return map[string]any{"type": "enterprise", "display_name": name, "active": active,
		"oidc": map[string]any{"issuer": "https://idp.acme.example", "client_id": clientID, "scopes": []any{"openid", "email"}}}
}

// oidcKeep is an enterprise connection spec that leaves its OIDC material
// as it is (oidc: null).
func oidcKeep(name string, active bool) map[string]any {
	return map[string]any{"type": "enterprise", "display_name": name, "active": active, "oidc": nil}
}

// connDoc is a document of connections only.
func connDoc(conns map[string]any) map[string]any { return map[string]any{"connections": conns} }

// applyBody is an apply body with one connection's secret and the host.
func applyBody(key, secret string) map[string]any {
	return map[string]any{"resolved_secrets": map[string]any{config.SecretRef(key): secret}, "sp_host": secHost}
}

// secApply sends an apply and returns the answer, whatever it is.
func secApply(e *apitest.Env, planID string, body any) *apitest.Response {
	e.T.Helper()
	return e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + planID + ":apply", Body: body})
}

// secProblems returns a problem's errors as "pointer code" lines, sorted.
func secProblems(t *testing.T, r *apitest.Response) []string {
	t.Helper()
	var p struct {
		Errors []config.FieldError `json:"errors"`
	}
	r.Decode(t, &p)
	out := make([]string, len(p.Errors))
	for i, fe := range p.Errors {
		out[i] = fe.Pointer + " " + string(fe.Code)
	}
	slices.Sort(out)
	return out
}

// secWant asserts the status, code and exact errors of a problem.
func secWant(t *testing.T, r *apitest.Response, status int, code string, errs ...string) {
	t.Helper()
	if r.Status != status || r.Code() != code {
		t.Fatalf("got %d %s, want %d %s: %s", r.Status, r.Code(), status, code, r.Body)
	}
	got := secProblems(t, r)
	want := slices.Clone(errs)
	slices.Sort(want)
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("errors:\n got %q\nwant %q", got, want)
	}
}

// secPlan fetches a plan.
func secPlan(t *testing.T, e *apitest.Env, id string) map[string]any {
	t.Helper()
	r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id})
	if r.Status != http.StatusOK {
		t.Fatalf("get plan %s: %d %s", id, r.Status, r.Body)
	}
	return r.JSON()
}

// secEvents returns a plan's events as "type" or "type:code" strings.
func secEvents(t *testing.T, e *apitest.Env, id string) []string {
	t.Helper()
	r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id + "/events?limit=100"})
	if r.Status != http.StatusOK {
		t.Fatalf("events of %s: %d %s", id, r.Status, r.Body)
	}
	var pg struct {
		Data []plans.Event `json:"data"`
	}
	r.Decode(t, &pg)
	out := make([]string, len(pg.Data))
	for i, ev := range pg.Data {
		out[i] = ev.Type
		if c, ok := ev.Data["code"].(string); ok {
			out[i] += ":" + c
		}
	}
	return out
}

// secChange returns the plan's change of connection key and its index.
func secChange(t *testing.T, plan map[string]any, key string) (int, map[string]any) {
	t.Helper()
	for i, c := range plan["changes"].([]any) {
		ch := c.(map[string]any)
		if ch["kind"] == "connection" && ch["key"] == key {
			return i, ch
		}
	}
	t.Fatalf("plan has no change of connection/%s: %v", key, plan["changes"])
	return 0, nil
}

// secConnID reads a connection's id from the database ("" when it does
// not exist).
func secConnID(t *testing.T, e *apitest.Env, key string) string {
	t.Helper()
	var ids []string
	err := e.GormDB().Raw("SELECT resource_id FROM resources WHERE environment_id = ? AND kind = 'connection' AND key = ?", e.EnvID, key).
		Scan(&ids).Error
	if err != nil {
		t.Fatalf("read connection %s: %v", key, err)
	}
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
}

// secConnections returns the exported connections.
func secConnections(e *apitest.Env) map[string]any {
	cfg, _ := e.Export()
	m, _ := cfg["connections"].(map[string]any)
	return m
}

// TestApply422ReportsEverySecretProblemAtOnce sends an apply body with
// every kind of secret problem, a missing host and bad confirmations: one
// 422 lists all of them, with RFC 6901 escaped pointers, and nothing runs.
func TestApply422ReportsEverySecretProblemAtOnce(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	p := e.Plan(connDoc(map[string]any{
		"a-sso": oidcConn("A", false, "a"), "b-sso": oidcConn("B", false, "b"), "c-sso": oidcConn("C", false, "c"),
		"d-sso": oidcConn("D", false, "d"), "e-sso": oidcConn("E", false, "e"),
	}), false)
	id := p["id"].(string)
	wantSecrets := []any{"KEENAUTH_CONNECTION_A_SSO_CLIENT_SECRET", "KEENAUTH_CONNECTION_B_SSO_CLIENT_SECRET",
		"KEENAUTH_CONNECTION_C_SSO_CLIENT_SECRET", "KEENAUTH_CONNECTION_D_SSO_CLIENT_SECRET", "KEENAUTH_CONNECTION_E_SSO_CLIENT_SECRET"}
	if got := p["required_secrets"].([]any); !slices.Equal(got, wantSecrets) || p["requires_sp_host"] != true {
		t.Fatalf("required_secrets = %v, requires_sp_host = %v", got, p["requires_sp_host"])
	}
	body := `{"resolved_secrets": {
		"KEENAUTH_CONNECTION_B_SSO_CLIENT_SECRET": "",
		"KEENAUTH_CONNECTION_C_SSO_CLIENT_SECRET": 42,
		"KEENAUTH_CONNECTION_D_SSO_CLIENT_SECRET": "` + strings.Repeat("d", 8193) + `",
		"KEENAUTH_CONNECTION_E_SSO_CLIENT_SECRET": "` + strings.Repeat("e", 8192) + `",
		"KEENAUTH_UNUSED": "v",
		"KEENAUTH_a/b~c": "v",
		"keenauth_lower": "v",
		"KEENAUTH_": "v",
		"KEENAUTH_OBJECT": {"value": "v"}},
	 "confirm_deletions": ["connection/a-sso", "nope", "connection/a-sso", 7]}`
	r := secApply(e, id, body)
	secWant(t, r, http.StatusUnprocessableEntity, "validation_failed",
		"/resolved_secrets/KEENAUTH_CONNECTION_A_SSO_CLIENT_SECRET secret_missing",
		"/resolved_secrets/KEENAUTH_CONNECTION_B_SSO_CLIENT_SECRET secret_invalid",
		"/resolved_secrets/KEENAUTH_CONNECTION_C_SSO_CLIENT_SECRET secret_invalid",
		"/resolved_secrets/KEENAUTH_CONNECTION_D_SSO_CLIENT_SECRET secret_invalid",
		"/resolved_secrets/KEENAUTH_UNUSED secret_unused",
		"/resolved_secrets/KEENAUTH_OBJECT secret_unused",
		"/resolved_secrets/KEENAUTH_a~1b~0c invalid",
		"/resolved_secrets/keenauth_lower invalid",
		"/resolved_secrets/KEENAUTH_ invalid",
		"/sp_host sp_host_required",
		"/confirm_deletions/0 not_a_deletion",
		"/confirm_deletions/1 invalid",
		"/confirm_deletions/2 duplicate",
		"/confirm_deletions/3 invalid",
	)
	if strings.Contains(string(r.Body), "ddddd") || strings.Contains(string(r.Body), "eeeee") {
		t.Fatalf("the 422 echoes a secret value: %.300s", r.Body)
	}

	// Nothing ran: the plan is still planned, nothing was written and the
	// federation service was not called.
	if got := secPlan(t, e, id)["status"]; got != "planned" {
		t.Fatalf("status = %v", got)
	}
	if conns := secConnections(e); len(conns) != 0 {
		t.Fatalf("connections written: %v", conns)
	}
	if calls := e.Fed.Calls(); len(calls) != 0 {
		t.Fatalf("federation called: %v", calls)
	}
	if got, want := secEvents(t, e, id), []string{"plan_created", "apply_rejected:validation_failed"}; !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
}

// TestApply422SPHost checks sp_host: required only when the plan writes
// OIDC material, refused when it does not, and a lowercase DNS name of two
// or more labels without a port.
func TestApply422SPHost(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	withMaterial := e.Plan(connDoc(map[string]any{"acme-sso": oidcConn("ACME", false, "abc")}), false)["id"].(string)
	label63 := strings.Repeat("a", 63)
	long253 := strings.Repeat(label63+".", 3) + strings.Repeat("b", 61) // 4*64-1-2 = 253
	if len(long253) != 253 {
		t.Fatalf("fixture: %d", len(long253))
	}
	for _, h := range []string{"", "Login.shop.example", "localhost", "login.shop.example:443", "-login.shop.example",
		"login-.shop.example", strings.Repeat("a", 64) + ".example", long253 + "c", "login_x.shop.example",
		"login..shop.example", "login.shop.example.", "https://login.shop.example", "login.shop.example/x", " login.shop.example"} {
		body := applyBody("acme-sso", secSecret)
		body["sp_host"] = h
		r := secApply(e, withMaterial, body)
		if r.Status != http.StatusUnprocessableEntity || !slices.Equal(secProblems(t, r), []string{"/sp_host invalid"}) {
			t.Errorf("sp_host %q: %d %s", h, r.Status, r.Body)
		}
	}
	for _, h := range []string{"a.b", label63 + ".example", long253, "login-1.shop.example", "1.2"} {
		body := applyBody("acme-sso", secSecret)
		body["sp_host"] = h
		r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + withMaterial + ":apply?validate_only=true", Body: body})
		if r.Status != http.StatusOK {
			t.Errorf("valid sp_host %q: %d %s", h, r.Status, r.Body)
		}
	}

	without := e.Plan(map[string]any{"connections": map[string]any{"db": map[string]any{"type": "database", "display_name": "DB",
		"active": true, "database": map[string]any{"requires_username": false}}}}, false)
	if without["requires_sp_host"] != false || len(without["required_secrets"].([]any)) != 0 {
		t.Fatalf("a database connection needs neither host nor secret: %v %v", without["requires_sp_host"], without["required_secrets"])
	}
	wid := without["id"].(string)
	secWant(t, secApply(e, wid, map[string]any{"sp_host": secHost}), http.StatusUnprocessableEntity, "validation_failed",
		"/sp_host sp_host_unused")
	secWant(t, secApply(e, wid, map[string]any{"sp_host": "NOT A HOST"}), http.StatusUnprocessableEntity, "validation_failed",
		"/sp_host sp_host_unused")
	secWant(t, secApply(e, wid, `{"sp_host": 42}`), http.StatusBadRequest, "malformed_request", "/sp_host malformed_request")
	secWant(t, secApply(e, wid, `{"resolved_secrets": ["KEENAUTH_X"]}`), http.StatusBadRequest, "malformed_request",
		"/resolved_secrets malformed_request")
	secWant(t, secApply(e, wid, `{"resolved_secrets": {}, "client_secret": "x"}`), http.StatusBadRequest, "unknown_field",
		"/client_secret unknown_field")
	// A name given twice has no single value.
	secWant(t, secApply(e, wid, `{"resolved_secrets": {"KEENAUTH_X": "a", "KEENAUTH_X": "b"}}`), http.StatusBadRequest, "malformed_request",
		"/resolved_secrets malformed_request")
	// sp_host: null is no host.
	if r := secApply(e, wid, `{"sp_host": null}`); r.Status != http.StatusOK {
		t.Fatalf("sp_host null: %d %s", r.Status, r.Body)
	}
	if calls := e.Fed.Calls(); len(calls) != 0 {
		t.Fatalf("federation called: %v", calls)
	}
}

// TestApply422TooManyEntries refuses more than 5,000 secrets or
// confirmations as a whole, and reports 5,000 one by one.
func TestApply422TooManyEntries(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	id := e.Plan(connDoc(map[string]any{"acme-sso": oidcConn("ACME", false, "abc")}), false)["id"].(string)
	entries := func(n int) (map[string]any, []string) {
		secrets := map[string]any{}
		var confirms []string
		for i := range n {
			secrets[fmt.Sprintf("KEENAUTH_EXTRA_%d", i)] = "v"
			confirms = append(confirms, fmt.Sprintf("api/a%d", i))
		}
		return secrets, confirms
	}
	secrets, confirms := entries(5001)
	secWant(t, secApply(e, id, map[string]any{"resolved_secrets": secrets, "confirm_deletions": confirms, "sp_host": secHost}),
		http.StatusUnprocessableEntity, "validation_failed", "/confirm_deletions too_many", "/resolved_secrets too_many")

	secrets, confirms = entries(5000)
	r := secApply(e, id, map[string]any{"resolved_secrets": secrets, "confirm_deletions": confirms, "sp_host": secHost})
	got := secProblems(t, r)
	if r.Status != http.StatusUnprocessableEntity || len(got) != 10001 {
		t.Fatalf("5,000 entries each: %d with %d errors", r.Status, len(got))
	}
	counts := map[string]int{}
	for _, g := range got {
		counts[g[strings.LastIndexByte(g, ' ')+1:]]++
	}
	if counts["secret_unused"] != 5000 || counts["not_a_deletion"] != 5000 || counts["secret_missing"] != 1 || counts["too_many"] != 0 {
		t.Fatalf("codes = %v", counts)
	}
	if got := secPlan(t, e, id)["status"]; got != "planned" {
		t.Fatalf("status = %v", got)
	}
}

// TestApply501SocialOwnCredentialsAfterSecretChecks: a social connection
// with its own credentials needs its client secret (planned like any
// secret, checked first), then answers 501 with nothing written.
func TestApply501SocialOwnCredentialsAfterSecretChecks(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	p := e.Plan(connDoc(map[string]any{
		"gh":     map[string]any{"type": "social", "display_name": "GitHub", "active": false, "social": map[string]any{"provider": "github", "use_own_credentials": true, "client_id": "gh-client"}},
		"google": map[string]any{"type": "social", "display_name": "Google", "active": false, "social": map[string]any{"provider": "google", "use_own_credentials": false}},
	}), false)
	id := p["id"].(string)
	_, gh := secChange(t, p, "gh")
	_, google := secChange(t, p, "google")
	if gh["requires_secret"] != true || gh["secret_ref"] != "KEENAUTH_CONNECTION_GH_CLIENT_SECRET" || gh["resource_id"] != nil {
		t.Fatalf("gh change = %v", gh)
	}
	if google["requires_secret"] != false || google["secret_ref"] != nil {
		t.Fatalf("google change = %v", google)
	}
	if p["requires_sp_host"] != false || !slices.Equal(p["required_secrets"].([]any), []any{"KEENAUTH_CONNECTION_GH_CLIENT_SECRET"}) {
		t.Fatalf("requires_sp_host = %v, required_secrets = %v", p["requires_sp_host"], p["required_secrets"])
	}

	secWant(t, secApply(e, id, map[string]any{}), http.StatusUnprocessableEntity, "validation_failed",
		"/resolved_secrets/KEENAUTH_CONNECTION_GH_CLIENT_SECRET secret_missing")
	secWant(t, secApply(e, id, applyBody("gh", "s")), http.StatusUnprocessableEntity, "validation_failed", "/sp_host sp_host_unused")
	secWant(t, secApply(e, id, map[string]any{"resolved_secrets": map[string]any{"KEENAUTH_CONNECTION_GH_CLIENT_SECRET": "s"}}),
		http.StatusNotImplemented, "not_implemented")
	// validate_only answers the same.
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply?validate_only=true",
		Body: map[string]any{"resolved_secrets": map[string]any{"KEENAUTH_CONNECTION_GH_CLIENT_SECRET": "s"}}})
	secWant(t, r, http.StatusNotImplemented, "not_implemented")

	if got := secPlan(t, e, id)["status"]; got != "planned" {
		t.Fatalf("status = %v", got)
	}
	if conns := secConnections(e); len(conns) != 0 {
		t.Fatalf("connections written: %v", conns)
	}
	want := []string{"plan_created", "apply_rejected:validation_failed", "apply_rejected:validation_failed", "apply_rejected:not_implemented"}
	if got := secEvents(t, e, id); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	if calls := e.Fed.Calls(); len(calls) != 0 {
		t.Fatalf("federation called: %v", calls)
	}
}

// TestPlanSecretRefNamesTheConnection: the secret of a connection is named
// after its key, upper-cased, '-' as '_'.
func TestPlanSecretRefNamesTheConnection(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	p := e.Plan(connDoc(map[string]any{"acme-sso-2": oidcConn("ACME 2", false, "abc")}), false)
	_, c := secChange(t, p, "acme-sso-2")
	if c["requires_secret"] != true || c["secret_ref"] != "KEENAUTH_CONNECTION_ACME_SSO_2_CLIENT_SECRET" || c["action"] != "create" {
		t.Fatalf("change = %v", c)
	}
	if !slices.Equal(p["required_secrets"].([]any), []any{"KEENAUTH_CONNECTION_ACME_SSO_2_CLIENT_SECRET"}) || p["requires_sp_host"] != true {
		t.Fatalf("plan = %v %v", p["required_secrets"], p["requires_sp_host"])
	}
}
