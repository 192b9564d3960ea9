package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/federation"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/service"
	"github.com/keenauth/configplans/test/apitest"
	"github.com/keenauth/configplans/test/fakefederation"
)

// dbConn is a database connection spec.
func dbConn(name string) map[string]any {
	return map[string]any{"type": "database", "display_name": name, "active": true, "database": map[string]any{"requires_username": false}}
}

// fedPuts returns the PUT calls the fake received.
func fedPuts(s *fakefederation.Server) []fakefederation.Call {
	var out []fakefederation.Call
	for _, c := range s.Calls() {
		if c.Method == http.MethodPut {
			out = append(out, c)
		}
	}
	return out
}

// fedCallback is the redirect URI of a connection.
func fedCallback(conID string) string { return "https://" + secHost + "/sso/" + conID + "/callback" }

// fedList lists a collection and returns its data.
func fedList(t *testing.T, e *apitest.Env, path string) []map[string]any {
	t.Helper()
	r := e.Do(apitest.Request{Method: "GET", Path: path})
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
	}
	var pg struct {
		Data []map[string]any `json:"data"`
	}
	r.Decode(t, &pg)
	return pg.Data
}

// fedActive returns the non-no_op changes of a plan as "action kind/key".
func fedActive(plan map[string]any) []string {
	var out []string
	for _, c := range plan["changes"].([]any) {
		ch := c.(map[string]any)
		if ch["action"] != "no_op" {
			out = append(out, fmt.Sprintf("%s %s/%s", ch["action"], ch["kind"], ch["key"]))
		}
	}
	return out
}

// observedFederation sees the database as another client would at the
// moment of each material write.
type observedFederation struct {
	federation.Client
	db *gorm.DB

	mu   sync.Mutex
	seen []string
}

func (o *observedFederation) PutOIDC(ctx context.Context, env, conID string, m federation.Material, secret string) error {
	var status string
	var conns, revs, logs int64
	o.db.Raw("SELECT status FROM config_plans WHERE environment_id = ? ORDER BY id DESC LIMIT 1", env).Scan(&status)
	o.db.Raw("SELECT count(*) FROM resources WHERE environment_id = ? AND resource_id = ?", env, conID).Scan(&conns)
	o.db.Raw("SELECT count(*) FROM config_revisions WHERE environment_id = ?", env).Scan(&revs)
	o.db.Raw("SELECT count(*) FROM management_logs WHERE environment_id = ? AND type = 'config.applied'", env).Scan(&logs)
	o.mu.Lock()
	o.seen = append(o.seen, fmt.Sprintf("plan %s, connection rows %d, revisions %d, config.applied %d", status, conns, revs, logs))
	o.mu.Unlock()
	return o.Client.PutOIDC(ctx, env, conID, m, secret)
}

// TestApplyWritesOIDCMaterialAfterTheCommit: the federation write happens
// once the connection record, the revision and the log are committed, with
// the callback of the new connection and the secret of the request; the
// plan is applied only after it, and shows the connection's id.
func TestApplyWritesOIDCMaterialAfterTheCommit(t *testing.T) {
	t.Parallel()
	fed := fakefederation.New("observed-token")
	t.Cleanup(fed.Close)
	obs := &observedFederation{Client: federation.NewHTTPClient(federation.HTTPConfig{BaseURL: fed.URL(), Token: "observed-token"})}
	e := apitest.Setup(t, apitest.Options{Federation: obs})
	obs.db = e.GormDB()

	p := e.Plan(connDoc(map[string]any{"acme-sso": oidcConn("ACME", false, "abc"), "db": dbConn("DB")}), false)
	i, c := secChange(t, p, "acme-sso")
	if c["action"] != "create" || c["resource_id"] != nil || c["requires_secret"] != true {
		t.Fatalf("planned change = %v", c)
	}
	applied := e.Apply(p["id"].(string), applyBody("acme-sso", secSecret))
	conID := secConnID(t, e, "acme-sso")
	if !strings.HasPrefix(conID, "con_") || !config.ValidID(config.PrefixConnection, conID) {
		t.Fatalf("connection id = %q", conID)
	}
	if applied["status"] != "applied" || applied["revision_id"] == nil || applied["applied_at"] == nil {
		t.Fatalf("applied plan = %v", applied)
	}
	if got := applied["changes"].([]any)[i].(map[string]any)["resource_id"]; got != conID {
		t.Fatalf("applied change resource_id = %v, want %s", got, conID)
	}
	if got := secPlan(t, e, p["id"].(string))["changes"].([]any)[i].(map[string]any)["resource_id"]; got != conID {
		t.Fatalf("stored change resource_id = %v, want %s", got, conID)
	}
	if _, db := secChange(t, applied, "db"); db["resource_id"] == nil || db["resource_id"] == conID {
		t.Fatalf("database connection resource_id = %v", db["resource_id"])
	}

	if want := []string{"plan applying, connection rows 1, revisions 1, config.applied 1"}; !slices.Equal(obs.seen, want) {
		t.Fatalf("at the federation write: %q, want %q", obs.seen, want)
	}
	if got := fed.SecretOf(e.EnvID, conID); got != secSecret {
		t.Fatalf("secret written = %q", got)
	}
	m, ok := fed.Material(e.EnvID, conID)
	want := federation.Material{Issuer: "https://idp.acme.example", ClientID: "abc", Scopes: []string{"openid", "email"}, RedirectURI: fedCallback(conID)}
	if !ok || m.Issuer != want.Issuer || m.ClientID != want.ClientID || !slices.Equal(m.Scopes, want.Scopes) || m.RedirectURI != want.RedirectURI {
		t.Fatalf("material = %+v, want %+v", m, want)
	}
	puts := fedPuts(fed)
	if len(puts) != 1 || puts[0].Path != "/v1/environments/"+e.EnvID+"/connections/"+conID+"/oidc" {
		t.Fatalf("PUT calls = %+v", puts)
	}
	if got, want := secEvents(t, e, p["id"].(string)), []string{"plan_created", "apply_started", "apply_succeeded"}; !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	// The material is confirmed: planning the same document again is all no_op.
	again := e.Plan(connDoc(map[string]any{"acme-sso": oidcConn("ACME", false, "abc"), "db": dbConn("DB")}), false)
	if got := fedActive(again); len(got) != 0 || again["requires_sp_host"] != false || len(again["required_secrets"].([]any)) != 0 {
		t.Fatalf("re-plan = %v %v %v", got, again["requires_sp_host"], again["required_secrets"])
	}
}

// TestApplyFederation422ReturnsPlanToPlanned: a refused material write
// answers 422 at the change's oidc, keeps what the transaction committed,
// returns the plan to planned with a federation_failed event; a retry is a
// config_conflict and a new plan of the same document writes only the
// material. oidc: null later leaves the material alone.
func TestApplyFederation422ReturnsPlanToPlanned(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	doc := connDoc(map[string]any{"acme-sso": oidcConn("ACME", false, "abc"), "db": dbConn("DB")})
	p := e.Plan(doc, false)
	id := p["id"].(string)
	i, _ := secChange(t, p, "acme-sso")

	e.Fed.Next(1).Reject(federation.FieldError{Pointer: "/issuer", Code: "invalid"})
	r := secApply(e, id, applyBody("acme-sso", secSecret))
	secWant(t, r, http.StatusUnprocessableEntity, "validation_failed", fmt.Sprintf("/changes/%d/spec/oidc/issuer invalid", i))

	got := secPlan(t, e, id)
	if got["status"] != "planned" || got["revision_id"] != nil || got["applied_at"] != nil {
		t.Fatalf("plan after the refusal = %v %v %v", got["status"], got["revision_id"], got["applied_at"])
	}
	if ev, want := secEvents(t, e, id), []string{"plan_created", "apply_started", "federation_failed:validation_failed"}; !slices.Equal(ev, want) {
		t.Fatalf("events = %v, want %v", ev, want)
	}
	conID := secConnID(t, e, "acme-sso")
	if conID == "" || secConnections(e)["acme-sso"] == nil || secConnections(e)["db"] == nil {
		t.Fatalf("the connection records were not kept: %v", secConnections(e))
	}
	if revs := fedList(t, e, "/v1/config-revisions"); len(revs) != 1 || revs[0]["plan_id"] != id {
		t.Fatalf("revisions = %v", revs)
	}
	if logs := fedList(t, e, "/v1/management-logs?type=config.applied"); len(logs) != 1 || logs[0]["plan_id"] != id {
		t.Fatalf("config.applied = %v", logs)
	}
	if s := e.Fed.SecretOf(e.EnvID, conID); s != "" {
		t.Fatalf("refused material stored with secret %q", s)
	}

	// The same plan cannot be applied again, and the answer says why.
	again := secApply(e, id, applyBody("acme-sso", secSecret))
	secWant(t, again, http.StatusConflict, "config_conflict",
		fmt.Sprintf("/changes/%d version_changed", i), fmt.Sprintf("/changes/%d version_changed", 1-i), "/types/0 type_changed")
	if d, _ := again.JSON()["detail"].(string); !strings.Contains(d, "federation service failed") {
		t.Errorf("the conflict's detail does not say the plan's own records moved the versions: %q", d)
	}
	if st := secPlan(t, e, id)["status"]; st != "conflicted" {
		t.Fatalf("status after the retry = %v", st)
	}

	// A new plan of the same document writes only the missing material.
	p2 := e.Plan(doc, false)
	if got := fedActive(p2); !slices.Equal(got, []string{"update connection/acme-sso"}) {
		t.Fatalf("new plan changes = %v", got)
	}
	_, c := secChange(t, p2, "acme-sso")
	if c["requires_secret"] != true || c["secret_ref"] != config.SecretRef("acme-sso") || c["resource_id"] != conID || len(c["diff"].([]any)) != 0 {
		t.Fatalf("material change = %v", c)
	}
	if p2["requires_sp_host"] != true || !slices.Equal(p2["required_secrets"].([]any), []any{config.SecretRef("acme-sso")}) {
		t.Fatalf("new plan needs %v, host %v", p2["required_secrets"], p2["requires_sp_host"])
	}
	applied := e.Apply(p2["id"].(string), applyBody("acme-sso", "client-secret-2"))
	if applied["status"] != "applied" {
		t.Fatalf("material plan = %v", applied["status"])
	}
	if s := e.Fed.SecretOf(e.EnvID, conID); s != "client-secret-2" {
		t.Fatalf("secret = %q", s)
	}
	if m, _ := e.Fed.Material(e.EnvID, conID); m.RedirectURI != fedCallback(conID) || m.Issuer != "https://idp.acme.example" {
		t.Fatalf("material = %+v", m)
	}
	if p3 := e.Plan(doc, false); len(fedActive(p3)) != 0 || p3["requires_sp_host"] != false {
		t.Fatalf("plan after the material write = %v", fedActive(p3))
	}

	// oidc: null leaves the material as it is: no secret, no host, no call.
	puts := len(fedPuts(e.Fed))
	same := e.Plan(connDoc(map[string]any{"acme-sso": oidcKeep("ACME", false)}), false)
	if len(fedActive(same)) != 0 || len(same["required_secrets"].([]any)) != 0 {
		t.Fatalf("oidc: null plan = %v %v", fedActive(same), same["required_secrets"])
	}
	renamed := e.Plan(connDoc(map[string]any{"acme-sso": oidcKeep("ACME Corp", false)}), false)
	_, c = secChange(t, renamed, "acme-sso")
	if !slices.Equal(fedActive(renamed), []string{"update connection/acme-sso"}) || c["requires_secret"] != false ||
		renamed["requires_sp_host"] != false || len(renamed["required_secrets"].([]any)) != 0 {
		t.Fatalf("renaming with oidc: null = %v", renamed)
	}
	if oidc := c["spec"].(map[string]any)["oidc"].(map[string]any); oidc["client_id"] != "abc" {
		t.Fatalf("the planned spec lost the material: %v", c["spec"])
	}
	e.Apply(renamed["id"].(string), map[string]any{})
	if n := len(fedPuts(e.Fed)); n != puts {
		t.Fatalf("oidc: null wrote material: %d PUTs, had %d", n, puts)
	}
	if s := e.Fed.SecretOf(e.EnvID, conID); s != "client-secret-2" {
		t.Fatalf("secret after oidc: null = %q", s)
	}
	if again := e.Plan(doc, false); !slices.Equal(fedActive(again), []string{"update connection/acme-sso"}) || again["requires_sp_host"] != false {
		t.Fatalf("the full document after the rename = %v", fedActive(again))
	}
}

// TestPlanOIDCNullNeverRequiresTheSecret: with its material known missing,
// a connection planned with oidc: null still leaves the material alone;
// the document with the material plans the write.
func TestPlanOIDCNullNeverRequiresTheSecret(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	p := e.Plan(connDoc(map[string]any{"acme-sso": oidcConn("ACME", false, "abc")}), false)
	e.Fed.Next(1).Reject(federation.FieldError{Pointer: "/client_id", Code: "unknown_client"})
	secWant(t, secApply(e, p["id"].(string), applyBody("acme-sso", secSecret)), http.StatusUnprocessableEntity, "validation_failed",
		"/changes/0/spec/oidc/client_id unknown_client")

	keep := e.Plan(connDoc(map[string]any{"acme-sso": oidcKeep("ACME", false)}), false)
	if len(fedActive(keep)) != 0 || keep["requires_sp_host"] != false || len(keep["required_secrets"].([]any)) != 0 {
		t.Fatalf("oidc: null with missing material = %v %v %v", fedActive(keep), keep["requires_sp_host"], keep["required_secrets"])
	}
	full := e.Plan(connDoc(map[string]any{"acme-sso": oidcConn("ACME", false, "abc")}), false)
	if !slices.Equal(fedActive(full), []string{"update connection/acme-sso"}) || full["requires_sp_host"] != true {
		t.Fatalf("the document with the material = %v", fedActive(full))
	}
}

// TestApplyFederationUnavailable503: a federation service that answers 503
// or does not answer in time makes the apply 503 with Retry-After; the
// connection record stays, the plan returns to planned with a
// federation_failed event, and a new plan writes the material.
func TestApplyFederationUnavailable503(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault func(*fakefederation.Server)
	}{
		{"503", func(s *fakefederation.Server) { s.Unavailable() }},
		{"no answer in time", func(s *fakefederation.Server) { s.On(http.MethodPut).Hang(time.Minute) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := apitest.Setup(t, apitest.Options{})
			doc := connDoc(map[string]any{"acme-sso": oidcConn("ACME", false, "abc")})
			id := e.Plan(doc, false)["id"].(string)
			tc.fault(e.Fed)
			r := secApply(e, id, applyBody("acme-sso", secSecret))
			secWant(t, r, http.StatusServiceUnavailable, "service_unavailable")
			if ra := r.Header.Get("Retry-After"); ra != "5" || r.JSON()["retry_after"] != 5.0 {
				t.Fatalf("Retry-After = %q, retry_after = %v", ra, r.JSON()["retry_after"])
			}
			if n := len(fedPuts(e.Fed)); n != 1+federation.DefaultRetries {
				t.Fatalf("PUT attempts = %d", n)
			}
			e.Fed.Clear()
			if st := secPlan(t, e, id)["status"]; st != "planned" {
				t.Fatalf("status = %v", st)
			}
			if ev, want := secEvents(t, e, id), []string{"plan_created", "apply_started", "federation_failed:service_unavailable"}; !slices.Equal(ev, want) {
				t.Fatalf("events = %v, want %v", ev, want)
			}
			conID := secConnID(t, e, "acme-sso")
			if conID == "" || e.Fed.SecretOf(e.EnvID, conID) != "" || secConnections(e)["acme-sso"] == nil {
				t.Fatalf("connection %q, stored secret %q", conID, e.Fed.SecretOf(e.EnvID, conID))
			}
			if revs := fedList(t, e, "/v1/config-revisions"); len(revs) != 1 || revs[0]["plan_id"] != id {
				t.Fatalf("revisions = %v", revs)
			}
			if logs := fedList(t, e, "/v1/management-logs?type=config.applied"); len(logs) != 1 || logs[0]["plan_id"] != id {
				t.Fatalf("config.applied = %v", logs)
			}
			if r := secApply(e, id, applyBody("acme-sso", secSecret)); r.Status != http.StatusConflict || r.Code() != "config_conflict" {
				t.Fatalf("retry: %d %s", r.Status, r.Body)
			}
			p2 := e.Plan(doc, false)
			if !slices.Equal(fedActive(p2), []string{"update connection/acme-sso"}) || p2["requires_sp_host"] != true {
				t.Fatalf("new plan = %v", fedActive(p2))
			}
			e.Apply(p2["id"].(string), applyBody("acme-sso", secSecret))
			if s := e.Fed.SecretOf(e.EnvID, conID); s != secSecret {
				t.Fatalf("secret = %q", s)
			}
		})
	}
}

// TestApplyFederation422Pointers: the federation service's pointers are
// reported where the request or the plan holds the value.
func TestApplyFederation422Pointers(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	for n, tc := range []struct {
		errs []federation.FieldError
		want []string
	}{
		{[]federation.FieldError{{Pointer: "/issuer", Code: "unreachable"}}, []string{"/changes/0/spec/oidc/issuer unreachable"}},
		{[]federation.FieldError{{Pointer: "/scopes/1", Code: "unsupported"}}, []string{"/changes/0/spec/oidc/scopes/1 unsupported"}},
		{[]federation.FieldError{{Pointer: "/client_secret", Code: "too_weak"}}, []string{"/resolved_secrets/KEENAUTH_CONNECTION_C%d_CLIENT_SECRET too_weak"}},
		{[]federation.FieldError{{Pointer: "/redirect_uri", Code: "invalid"}}, []string{"/sp_host invalid"}},
		{[]federation.FieldError{{Pointer: "", Code: "rejected"}}, []string{"/changes/0/spec/oidc rejected"}},
		{[]federation.FieldError{{Pointer: "/unknown", Code: "invalid"}}, []string{"/changes/0/spec/oidc invalid"}},
		{nil, []string{"/changes/0/spec/oidc invalid"}},
		{[]federation.FieldError{{Pointer: "/issuer", Code: "invalid"}, {Pointer: "/client_id", Code: "required"}, {Pointer: "/client_secret", Code: "required"}},
			[]string{"/changes/0/spec/oidc/issuer invalid", "/changes/0/spec/oidc/client_id required", "/resolved_secrets/KEENAUTH_CONNECTION_C%d_CLIENT_SECRET required"}},
	} {
		key := fmt.Sprintf("c%d", n)
		p := e.Plan(connDoc(map[string]any{key: oidcConn(fmt.Sprintf("C%d", n), false, "abc")}), false)
		want := make([]string, len(tc.want))
		for i, w := range tc.want {
			want[i] = strings.ReplaceAll(w, "%d", fmt.Sprint(n))
		}
		e.Fed.Next(1).Reject(tc.errs...)
		secWant(t, secApply(e, p["id"].(string), applyBody(key, secSecret)), http.StatusUnprocessableEntity, "validation_failed", want...)
	}
}

// TestApplyFederationPartialFailure: of two material writes, the confirmed
// one stays confirmed; the new plan writes only the refused one.
func TestApplyFederationPartialFailure(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	doc := connDoc(map[string]any{"a-sso": oidcConn("A", false, "a"), "b-sso": oidcConn("B", false, "b")})
	p := e.Plan(doc, false)
	ib, _ := secChange(t, p, "b-sso")
	body := map[string]any{"resolved_secrets": map[string]any{config.SecretRef("a-sso"): "sa", config.SecretRef("b-sso"): "sb"}, "sp_host": secHost}
	// Changes are written in key order: a-sso first, b-sso second.
	e.Fed.On(http.MethodPut).Next(1).Hang(time.Millisecond)
	e.Fed.On(http.MethodPut).Next(1).Reject(federation.FieldError{Pointer: "/client_id", Code: "unknown_client"})
	secWant(t, secApply(e, p["id"].(string), body), http.StatusUnprocessableEntity, "validation_failed",
		fmt.Sprintf("/changes/%d/spec/oidc/client_id unknown_client", ib))
	a, b := secConnID(t, e, "a-sso"), secConnID(t, e, "b-sso")
	if e.Fed.SecretOf(e.EnvID, a) != "sa" || e.Fed.SecretOf(e.EnvID, b) != "" {
		t.Fatalf("secrets: a %q, b %q", e.Fed.SecretOf(e.EnvID, a), e.Fed.SecretOf(e.EnvID, b))
	}
	p2 := e.Plan(doc, false)
	if !slices.Equal(fedActive(p2), []string{"update connection/b-sso"}) ||
		!slices.Equal(p2["required_secrets"].([]any), []any{config.SecretRef("b-sso")}) {
		t.Fatalf("new plan = %v %v", fedActive(p2), p2["required_secrets"])
	}
}

// switchedFederation is a federation client that can be swapped.
type switchedFederation struct {
	mu sync.Mutex
	c  federation.Client
}

func (s *switchedFederation) use(c federation.Client) { s.mu.Lock(); s.c = c; s.mu.Unlock() }

func (s *switchedFederation) get() federation.Client { s.mu.Lock(); defer s.mu.Unlock(); return s.c }

func (s *switchedFederation) PutOIDC(ctx context.Context, env, conID string, m federation.Material, secret string) error {
	return s.get().PutOIDC(ctx, env, conID, m, secret)
}

func (s *switchedFederation) GetOIDC(ctx context.Context, env, conID string) (federation.Stored, error) {
	return s.get().GetOIDC(ctx, env, conID)
}

func (s *switchedFederation) TestOIDC(ctx context.Context, env, conID string) (bool, *string, error) {
	return s.get().TestOIDC(ctx, env, conID)
}

// TestFederationTokenRefused503: the federation service refusing our token
// is a configuration error of this service, not of the request: the apply
// and the connection test answer 503, the write is not retried, and a log
// line at ERROR level says what to fix.
func TestFederationTokenRefused503(t *testing.T) {
	t.Parallel()
	fed := fakefederation.New("the-right-token")
	t.Cleanup(fed.Close)
	sw := &switchedFederation{c: federation.NewHTTPClient(federation.HTTPConfig{BaseURL: fed.URL(), Token: "the-right-token"})}
	e := apitest.Setup(t, apitest.Options{Federation: sw})
	e.Apply(e.Plan(connDoc(map[string]any{"acme-sso": oidcConn("ACME", false, "abc")}), false)["id"].(string), applyBody("acme-sso", secSecret))
	const logLine = `"level":"ERROR","msg":"federation service refused our token; check KEENAUTHD_FEDERATION_TOKEN"`
	if strings.Contains(e.Logs.String(), logLine) {
		t.Fatalf("logged before the token was refused")
	}
	sw.use(federation.NewHTTPClient(federation.HTTPConfig{BaseURL: fed.URL(), Token: "a-wrong-token"}))

	calls := len(fed.Calls())
	r := testConn(e, "acme-sso")
	secWant(t, r, http.StatusServiceUnavailable, "service_unavailable")
	if r.Header.Get("Retry-After") == "" || len(fed.Calls()) != calls+1 {
		t.Fatalf("Retry-After %q, calls %d", r.Header.Get("Retry-After"), len(fed.Calls())-calls)
	}
	if n := strings.Count(e.Logs.String(), logLine); n != 1 {
		t.Fatalf("%d ERROR logs of the refused token after the test:\n%s", n, e.Logs.String())
	}

	p := e.Plan(connDoc(map[string]any{"acme-sso": oidcConn("ACME", false, "other")}), false)
	r = secApply(e, p["id"].(string), applyBody("acme-sso", secSecret))
	secWant(t, r, http.StatusServiceUnavailable, "service_unavailable")
	if r.Header.Get("Retry-After") == "" || len(fed.Calls()) != calls+2 {
		t.Fatalf("Retry-After %q, calls %d: a refused token is not retried", r.Header.Get("Retry-After"), len(fed.Calls())-calls)
	}
	if n := strings.Count(e.Logs.String(), logLine); n != 2 {
		t.Fatalf("%d ERROR logs of the refused token after the apply:\n%s", n, e.Logs.String())
	}
	if ev := secEvents(t, e, p["id"].(string)); !slices.Equal(ev, []string{"plan_created", "apply_started", "federation_failed:service_unavailable"}) {
		t.Fatalf("events = %v", ev)
	}

	// A federation service that lost the material cannot test it.
	empty := fakefederation.New("the-right-token")
	t.Cleanup(empty.Close)
	sw.use(federation.NewHTTPClient(federation.HTTPConfig{BaseURL: empty.URL(), Token: "the-right-token"}))
	secWant(t, testConn(e, "acme-sso"), http.StatusConflict, "connection_not_testable")
}

// TestApplyWithoutFederationService503: with no federation service
// configured, a plan with OIDC material is refused with nothing written.
func TestApplyWithoutFederationService503(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{NoFederation: true})
	id := e.Plan(connDoc(map[string]any{"acme-sso": oidcConn("ACME", false, "abc")}), false)["id"].(string)
	r := secApply(e, id, applyBody("acme-sso", secSecret))
	secWant(t, r, http.StatusServiceUnavailable, "service_unavailable")
	if r.Header.Get("Retry-After") == "" {
		t.Fatalf("no Retry-After")
	}
	if secConnID(t, e, "acme-sso") != "" || secPlan(t, e, id)["status"] != "planned" {
		t.Fatalf("something was written")
	}
}

// TestApplyValidateOnlyMakesNoFederationCall: validate_only checks a plan
// with material without writing it anywhere.
func TestApplyValidateOnlyMakesNoFederationCall(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	id := e.Plan(connDoc(map[string]any{"acme-sso": oidcConn("ACME", false, "abc")}), false)["id"].(string)
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply?validate_only=true", Body: applyBody("acme-sso", secSecret)})
	if r.Status != http.StatusOK || r.JSON()["status"] != "planned" {
		t.Fatalf("validate_only: %d %s", r.Status, r.Body)
	}
	if len(e.Fed.Calls()) != 0 || secConnID(t, e, "acme-sso") != "" {
		t.Fatalf("validate_only wrote: calls %v", e.Fed.Calls())
	}
	if ev := secEvents(t, e, id); !slices.Equal(ev, []string{"plan_created"}) {
		t.Fatalf("events = %v", ev)
	}
}

// testConn runs POST /v1/connections/{key}:test.
func testConn(e *apitest.Env, key string) *apitest.Response {
	e.T.Helper()
	return e.Do(apitest.Request{Method: "POST", Path: "/v1/connections/" + key + ":test"})
}

// TestConnectionTestAndActivation: what can be tested, what a test
// answers, and that activation needs a successful test of the material the
// connection will have.
func TestConnectionTestAndActivation(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	social := map[string]any{"type": "social", "display_name": "GitHub", "active": false, "social": map[string]any{"provider": "github", "use_own_credentials": false}}
	p := e.Plan(connDoc(map[string]any{"acme-sso": oidcConn("ACME", false, "abc"), "gh": social, "db": dbConn("DB"),
		"broken-sso": oidcConn("Broken", false, "zzz")}), false)
	// Connections are written in key order: acme-sso, then broken-sso.
	e.Fed.On(http.MethodPut).Next(1).Hang(time.Millisecond)
	e.Fed.On(http.MethodPut).Next(1).Reject(federation.FieldError{Pointer: "/issuer", Code: "invalid"})
	body := map[string]any{"resolved_secrets": map[string]any{config.SecretRef("acme-sso"): "s1", config.SecretRef("broken-sso"): "s2"}, "sp_host": secHost}
	if r := secApply(e, p["id"].(string), body); r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("apply: %d %s", r.Status, r.Body)
	}
	conID := secConnID(t, e, "acme-sso")

	secWant(t, testConn(e, "nope"), http.StatusNotFound, "not_found")
	secWant(t, testConn(e, "Not_A_Key"), http.StatusNotFound, "not_found")
	secWant(t, e.Do(apitest.Request{Method: "POST", Path: "/v1/connections/acme-sso:probe"}), http.StatusNotFound, "not_found")
	secWant(t, testConn(e, "gh"), http.StatusConflict, "connection_not_testable")
	secWant(t, testConn(e, "db"), http.StatusConflict, "connection_not_testable")
	secWant(t, testConn(e, "broken-sso"), http.StatusConflict, "connection_not_testable")
	readOnly := e.Key("connections:read", "config:read")
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/connections/acme-sso:test", Secret: readOnly})
	if r.Status != http.StatusForbidden || fmt.Sprint(r.JSON()["required_permissions"]) != "[connections:write]" {
		t.Fatalf("read-only key: %d %s", r.Status, r.Body)
	}

	e.Fed.Next(1).Unavailable()
	r = testConn(e, "acme-sso")
	secWant(t, r, http.StatusServiceUnavailable, "service_unavailable")
	if r.Header.Get("Retry-After") == "" {
		t.Fatalf("503 without Retry-After")
	}

	activate := connDoc(map[string]any{"acme-sso": oidcConn("ACME", true, "abc")})
	// Never tested: activation is refused.
	act := e.Plan(activate, false)
	if _, c := secChange(t, act, "acme-sso"); c["action"] != "update" || c["requires_secret"] != false {
		t.Fatalf("activation change = %v", c)
	}
	secWant(t, secApply(e, act["id"].(string), map[string]any{}), http.StatusConflict, "connection_test_required", "/changes/0/spec test_required")

	e.Fed.TestResult(e.EnvID, conID, false, "the issuer does not answer")
	r = testConn(e, "acme-sso")
	if r.Status != http.StatusOK {
		t.Fatalf("failed test: %d %s", r.Status, r.Body)
	}
	if m := r.JSON(); m["connection"] != "acme-sso" || m["status"] != "failed" || m["reason"] != "the issuer does not answer" || m["tested_at"] == nil {
		t.Fatalf("failed test = %v", m)
	}
	// A failed test does not allow activation either.
	secWant(t, secApply(e, act["id"].(string), map[string]any{}), http.StatusConflict, "connection_test_required", "/changes/0/spec test_required")

	e.Fed.TestResult(e.EnvID, conID, true, "")
	r = testConn(e, "acme-sso")
	if m := r.JSON(); r.Status != http.StatusOK || m["status"] != "succeeded" || m["reason"] != nil {
		t.Fatalf("succeeded test: %d %s", r.Status, r.Body)
	}
	if _, ok := r.JSON()["reason"]; !ok {
		t.Fatalf("reason is absent, not null: %s", r.Body)
	}

	// Activating with other material: the test is stale.
	changed := e.Plan(connDoc(map[string]any{"acme-sso": oidcConn("ACME", true, "other-client")}), false)
	puts := len(fedPuts(e.Fed))
	secWant(t, secApply(e, changed["id"].(string), applyBody("acme-sso", "s3")), http.StatusConflict, "connection_test_required",
		"/changes/0/spec test_required")
	if len(fedPuts(e.Fed)) != puts || secPlan(t, e, changed["id"].(string))["status"] != "planned" {
		t.Fatalf("a refused activation wrote material")
	}

	// Activating with the tested material succeeds.
	if got := e.Apply(act["id"].(string), map[string]any{}); got["status"] != "applied" {
		t.Fatalf("activation = %v", got["status"])
	}
	if c := secConnections(e)["acme-sso"].(map[string]any); c["active"] != true {
		t.Fatalf("not active: %v", c)
	}

	// An active enterprise connection cannot be created: it has no test.
	create := e.Plan(connDoc(map[string]any{"new-sso": oidcConn("New", true, "n")}), false)
	secWant(t, secApply(e, create["id"].(string), applyBody("new-sso", "s4")), http.StatusConflict, "connection_test_required",
		"/changes/0/spec test_required")
	if secConnID(t, e, "new-sso") != "" {
		t.Fatalf("the active connection was created")
	}
}

// TestConnectionTestGoesStaleWithTheMaterial: a test of earlier material
// does not allow activating the connection with its new material.
func TestConnectionTestGoesStaleWithTheMaterial(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	e.Apply(e.Plan(connDoc(map[string]any{"acme-sso": oidcConn("ACME", false, "v1")}), false)["id"].(string), applyBody("acme-sso", "s1"))
	if r := testConn(e, "acme-sso"); r.Status != http.StatusOK || r.JSON()["status"] != "succeeded" {
		t.Fatalf("test: %d %s", r.Status, r.Body)
	}
	e.Apply(e.Plan(connDoc(map[string]any{"acme-sso": oidcConn("ACME", false, "v2")}), false)["id"].(string), applyBody("acme-sso", "s2"))
	act := e.Plan(connDoc(map[string]any{"acme-sso": oidcConn("ACME", true, "v2")}), false)
	secWant(t, secApply(e, act["id"].(string), map[string]any{}), http.StatusConflict, "connection_test_required", "/changes/0/spec test_required")
	if r := testConn(e, "acme-sso"); r.Status != http.StatusOK || r.JSON()["status"] != "succeeded" {
		t.Fatalf("test: %d %s", r.Status, r.Body)
	}
	if got := e.Apply(act["id"].(string), map[string]any{}); got["status"] != "applied" {
		t.Fatalf("activation = %v", got["status"])
	}
}

// fedWaitPuts waits until the fake has received n PUTs.
func fedWaitPuts(t *testing.T, e *apitest.Env, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(fedPuts(e.Fed)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the fake received %d PUTs, want %d", len(fedPuts(e.Fed)), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestApplySlowMaterialWritesKeepThePlansLease: material writes that take
// longer in all than the apply lease keep the plan applying, so that
// another apply cannot take it meanwhile.
func TestApplySlowMaterialWritesKeepThePlansLease(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	doc := connDoc(map[string]any{"a-sso": oidcConn("A", false, "a"), "b-sso": oidcConn("B", false, "b")})
	id := e.Plan(doc, false)["id"].(string)
	body := map[string]any{"resolved_secrets": map[string]any{config.SecretRef("a-sso"): "sa", config.SecretRef("b-sso"): "sb"}, "sp_host": secHost}
	e.Fed.On(http.MethodPut).Hang(1500 * time.Millisecond)
	done := make(chan *apitest.Response, 1)
	go func() { done <- secApply(e, id, body) }()

	lease := plans.DefaultConfig().ApplyLease
	fedWaitPuts(t, e, 1)
	e.Clock.Advance(lease * 2 / 3)
	fedWaitPuts(t, e, 2)
	e.Clock.Advance(lease * 2 / 3) // past the lease taken when the apply started
	r := secApply(e, id, body)
	if r.Status != http.StatusConflict || r.Code() != "config_plan_not_applicable" || r.JSON()["plan_status"] != "applying" {
		t.Fatalf("a second apply during the material writes: %d %s", r.Status, r.Body)
	}
	first := <-done
	if first.Status != http.StatusOK || first.JSON()["status"] != "applied" {
		t.Fatalf("the apply: %d %s", first.Status, first.Body)
	}
	if e.Fed.SecretOf(e.EnvID, secConnID(t, e, "b-sso")) != "sb" {
		t.Fatalf("the second material was not written")
	}
}

// TestApplyFinishesMaterialWritesWhenTheClientGoesAway: the records are
// committed; a client that stops waiting does not leave their material
// unwritten.
func TestApplyFinishesMaterialWritesWhenTheClientGoesAway(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	id := e.Plan(connDoc(map[string]any{"acme-sso": oidcConn("ACME", false, "abc")}), false)["id"].(string)
	a, err := e.Domain.Keys.Authenticate(context.Background(), e.Secret)
	if err != nil {
		t.Fatal(err)
	}
	a.RequestID = config.NewID(config.PrefixRequest)
	req, err := service.ParseApplyRequest([]byte(`{"resolved_secrets": {"` + config.SecretRef("acme-sso") + `": "s1"}, "sp_host": "` + secHost + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	e.Fed.Next(1).Hang(500 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		fedWaitPuts(t, e, 1)
		cancel()
	}()
	res, err := e.Domain.Plans.Apply(ctx, a, id, req, plans.ApplyOptions{})
	if err != nil || res.Plan.Status != "applied" {
		t.Fatalf("apply: %v %+v", err, res.Plan)
	}
	if s := e.Fed.SecretOf(e.EnvID, secConnID(t, e, "acme-sso")); s != "s1" {
		t.Fatalf("secret = %q", s)
	}
	if ev := secEvents(t, e, id); !slices.Equal(ev, []string{"plan_created", "apply_started", "apply_succeeded"}) {
		t.Fatalf("events = %v", ev)
	}
}

// TestApplyFederationUnavailableStopsTheWrites: once the federation service
// is unavailable, the apply answers 503 without trying the other
// connections' material; the new plan writes all of it.
func TestApplyFederationUnavailableStopsTheWrites(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	doc := connDoc(map[string]any{"a-sso": oidcConn("A", false, "a"), "b-sso": oidcConn("B", false, "b")})
	body := map[string]any{"resolved_secrets": map[string]any{config.SecretRef("a-sso"): "sa", config.SecretRef("b-sso"): "sb"}, "sp_host": secHost}
	e.Fed.Unavailable()
	secWant(t, secApply(e, e.Plan(doc, false)["id"].(string), body), http.StatusServiceUnavailable, "service_unavailable")
	puts := fedPuts(e.Fed)
	a := secConnID(t, e, "a-sso")
	if len(puts) != 1+federation.DefaultRetries || slices.ContainsFunc(puts, func(c fakefederation.Call) bool { return !strings.Contains(c.Path, a) }) {
		t.Fatalf("PUTs after the service became unavailable: %d", len(puts))
	}
	e.Fed.Clear()
	p := e.Plan(doc, false)
	if got := fedActive(p); !slices.Equal(got, []string{"update connection/a-sso", "update connection/b-sso"}) {
		t.Fatalf("new plan = %v", got)
	}
	e.Apply(p["id"].(string), body)
	if e.Fed.SecretOf(e.EnvID, a) != "sa" || e.Fed.SecretOf(e.EnvID, secConnID(t, e, "b-sso")) != "sb" {
		t.Fatalf("material not written")
	}
}

// fedCanary is a client secret of 40 characters. Its first 20 are what a
// code may hold, and its last 20 quote a pointer the federation service may
// name ("/scopes/7315"), so that only the check for parts of the secret,
// not the shape of a code or a pointer, can keep them out.
const fedCanary = "Cy4nQ7-Wv2Lx9.Pt3Rk_" + "x/scopes/7315-Zq8Bd6"

// fedCanaryFind returns where each 8-byte substring of the canary is in s.
func fedCanaryFind(source, s string) []string {
	var found []string
	for i := 0; i+8 <= len(fedCanary); i++ {
		if j := strings.Index(s, fedCanary[i:i+8]); j >= 0 {
			found = append(found, fmt.Sprintf("%s: %q in …%s…", source, fedCanary[i:i+8], s[max(j-60, 0):min(j+68, len(s))]))
		}
	}
	return found
}

// TestApplyFederation422EchoingPartsOfTheSecret: the federation service
// refuses the material with codes and pointers that echo the secret's
// 20-byte prefix and 8-byte chunks of its middle. No 8 bytes of the secret
// reach the answer, its replay, the plan's events, the management log, the
// logs or the stored idempotency record; the codes become invalid and the
// pointers are cut to the fields they name.
func TestApplyFederation422EchoingPartsOfTheSecret(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	name := config.SecretRef("acme-sso")
	if len(fedCanary) != 40 {
		t.Fatalf("the canary has %d characters", len(fedCanary))
	}
	id := e.Plan(connDoc(map[string]any{"acme-sso": oidcConn("ACME", false, "abc")}), false)["id"].(string)
	e.Fed.Next(1).Reject(
		federation.FieldError{Pointer: "/client_secret", Code: fedCanary[:20]},
		federation.FieldError{Pointer: "/issuer", Code: fedCanary[10:18]},
		federation.FieldError{Pointer: "/client_secret/" + fedCanary[:20], Code: "too_weak"},
		federation.FieldError{Pointer: fedCanary[21:33], Code: "unsupported"},
	)
	if fedCanary[21:33] != "/scopes/7315" {
		t.Fatalf("the canary's pointer is %q", fedCanary[21:33])
	}
	req := apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply", Body: applyBody("acme-sso", fedCanary),
		Header: map[string]string{"Idempotency-Key": "fed-canary"}}
	first := e.Do(req)
	secWant(t, first, http.StatusUnprocessableEntity, "validation_failed",
		"/resolved_secrets/"+name+" invalid",
		"/changes/0/spec/oidc/issuer invalid",
		"/changes/0/spec/oidc too_weak",
		"/changes/0/spec/oidc/scopes unsupported")
	replay := e.Do(req)
	if replay.Header.Get("Idempotent-Replayed") != "true" || string(replay.Body) != string(first.Body) {
		t.Fatalf("the 422 was not replayed: %v %s", replay.Header, replay.Body)
	}
	puts := fedPuts(e.Fed)
	if len(puts) != 1 || !strings.Contains(string(puts[0].Body), fedCanary) {
		t.Fatalf("the federation service did not get the canary: %d PUTs", len(puts))
	}

	var found []string
	for i, r := range []*apitest.Response{first, replay} {
		var b strings.Builder
		for k, vs := range r.Header {
			b.WriteString(k + ": " + strings.Join(vs, ", ") + "\n")
		}
		b.Write(r.Body)
		found = append(found, fedCanaryFind(fmt.Sprintf("answer %d", i), b.String())...)
	}
	events := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id + "/events?limit=100"})
	if !strings.Contains(string(events.Body), "federation_failed") {
		t.Fatalf("no federation_failed event: %s", events.Body)
	}
	found = append(found, fedCanaryFind("events", string(events.Body))...)
	logs := e.Do(apitest.Request{Method: "GET", Path: "/v1/management-logs?limit=100"})
	if !strings.Contains(string(logs.Body), id) {
		t.Fatalf("the management log does not show the apply: %s", logs.Body)
	}
	found = append(found, fedCanaryFind("management log", string(logs.Body))...)
	found = append(found, fedCanaryFind("logs", e.Logs.String())...)
	if !apitest.Embedded() {
		// The stored record, read from Redis itself.
		ctx := context.Background()
		keys, err := e.Redis.Keys(ctx, e.Prefix+"idem:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		var stored int
		for _, k := range keys {
			rec, err := e.Redis.HGetAll(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if rec["body"] == string(first.Body) {
				stored++
			}
			var b strings.Builder
			for f, v := range rec {
				b.WriteString(f + "=" + v + "\n")
			}
			found = append(found, fedCanaryFind("redis "+k, b.String())...)
		}
		if stored != 1 {
			t.Fatalf("%d Redis records hold the answer (keys %v)", stored, keys)
		}
	}
	// The search finds what it looks for.
	if len(fedCanaryFind("probe", "<"+fedCanary[13:21]+">")) == 0 {
		t.Fatal("the search misses a chunk of the canary")
	}
	if len(found) > 0 {
		t.Fatalf("parts of the client secret left a trace:\n%s", strings.Join(found, "\n"))
	}
}
