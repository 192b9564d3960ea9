package api_test

import (
	"encoding/base64"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/test/apitest"
)

var secretForm = regexp.MustCompile(`^whsec_[A-Za-z0-9+/]{43}=$`)

// webhookEnv is a harness whose webhooks may reach a local receiver over
// http (as keenauthd dev allows).
func webhookEnv(t *testing.T, opt apitest.Options) *apitest.Env {
	t.Helper()
	if opt.Plans.PlanTTL == 0 {
		opt.Plans = plans.DefaultConfig()
	}
	opt.Plans.Webhooks.AllowHTTP, opt.Plans.Webhooks.AllowPrivate = true, true
	return apitest.Setup(t, opt)
}

// createEndpoint creates an endpoint and fails t unless 201.
func createEndpoint(t *testing.T, e *apitest.Env, url string, events ...string) map[string]any {
	t.Helper()
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/webhook-endpoints", Body: map[string]any{"url": url, "events": events}})
	if r.Status != http.StatusCreated {
		t.Fatalf("create endpoint %s: %d %s", url, r.Status, r.Body)
	}
	return r.JSON()
}

// deliveryRows reads the outbox of the environment, oldest first.
func deliveryRows(t *testing.T, e *apitest.Env) []configdb.WebhookDeliveryRow {
	t.Helper()
	var rows []configdb.WebhookDeliveryRow
	if err := e.GormDB().Where("environment_id = ?", e.EnvID).Order("created_at, id").Find(&rows).Error; err != nil {
		t.Fatalf("read deliveries: %v", err)
	}
	return rows
}

// TestWebhookEndpointsLifecycle (§19): create (201, the secret shown once),
// read, list, change, rotate (a new secret shown once), delete (204); each
// change is a management-log entry that never holds a secret.
func TestWebhookEndpointsLifecycle(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/webhook-endpoints",
		Body: map[string]any{"url": "https://hooks.shop.example/keenauth", "events": []string{"plan.applied", "plan.created"}, "description": "CI"}})
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	created := r.JSON()
	id, secret := created["id"].(string), created["secret"].(string)
	if !config.ValidID(plans.PrefixWebhookEndpoint, id) || !secretForm.MatchString(secret) || created["status"] != "enabled" ||
		created["object"] != "webhook_endpoint" || created["description"] != "CI" {
		t.Fatalf("created: %s", r.Body)
	}
	if raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_")); len(raw) != 32 {
		t.Fatalf("the secret is %d bytes", len(raw))
	}
	got := e.Do(apitest.Request{Method: "GET", Path: "/v1/webhook-endpoints/" + id})
	want := map[string]any{}
	for k, v := range created {
		if k != "secret" {
			want[k] = v
		}
	}
	if got.Status != http.StatusOK || !cmp.Equal(want, got.JSON()) {
		t.Fatalf("GET: %d %s, want %v", got.Status, got.Body, want)
	}
	list := e.Do(apitest.Request{Method: "GET", Path: "/v1/webhook-endpoints"})
	if list.Status != http.StatusOK || len(list.JSON()["data"].([]any)) != 1 || !cmp.Equal(want, list.JSON()["data"].([]any)[0]) {
		t.Fatalf("list: %d %s", list.Status, list.Body)
	}
	patched := e.Do(apitest.Request{Method: "PATCH", Path: "/v1/webhook-endpoints/" + id,
		Body: map[string]any{"status": "disabled", "events": []string{"*"}, "description": nil}})
	if p := patched.JSON(); patched.Status != http.StatusOK || p["status"] != "disabled" || p["description"] != nil ||
		!cmp.Equal(p["events"], []any{"*"}) || p["url"] != "https://hooks.shop.example/keenauth" || p["secret"] != nil {
		t.Fatalf("PATCH: %d %s", patched.Status, patched.Body)
	}
	rot := e.Do(apitest.Request{Method: "POST", Path: "/v1/webhook-endpoints/" + id + ":rotate-secret"})
	rotated, _ := rot.JSON()["secret"].(string)
	if rot.Status != http.StatusOK || !secretForm.MatchString(rotated) || rotated == secret {
		t.Fatalf("rotate: %d %s", rot.Status, rot.Body)
	}
	var stored configdb.WebhookEndpointRow
	e.GormDB().Where("id = ?", id).Take(&stored)
	if stored.Secret != rotated || stored.PreviousSecret == nil || *stored.PreviousSecret != secret || stored.PreviousSecretUntil == nil ||
		stored.PreviousSecretUntil.Sub(e.Clock.Now()) < 23*60*60e9 {
		t.Fatalf("stored after rotation: %+v", stored)
	}
	if d := e.Do(apitest.Request{Method: "DELETE", Path: "/v1/webhook-endpoints/" + id}); d.Status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", d.Status, d.Body)
	}
	if g := e.Do(apitest.Request{Method: "GET", Path: "/v1/webhook-endpoints/" + id}); g.Status != http.StatusNotFound {
		t.Fatalf("GET after DELETE: %d", g.Status)
	}
	logs := e.Do(apitest.Request{Method: "GET", Path: "/v1/management-logs"})
	var types []string
	for _, l := range logs.JSON()["data"].([]any) {
		types = append(types, l.(map[string]any)["type"].(string))
		if d := l.(map[string]any)["data"].(map[string]any); d["id"] != id {
			t.Errorf("log entry data %v", d)
		}
	}
	if !cmp.Equal(types, []string{"webhook_endpoint.deleted", "webhook_endpoint.secret_rotated", "webhook_endpoint.updated", "webhook_endpoint.created"}) {
		t.Errorf("log types %v", types)
	}
	// Neither secret anywhere but in the two answers that showed them.
	for _, s := range []string{secret, rotated} {
		body := strings.TrimSuffix(strings.TrimPrefix(s, "whsec_"), "=")
		for where, text := range map[string]string{"GET": string(got.Body), "list": string(list.Body), "PATCH": string(patched.Body),
			"management log": string(logs.Body), "process log": e.Logs.String()} {
			if strings.Contains(text, body) {
				t.Errorf("a secret is in the %s", where)
			}
		}
	}
}

// TestWebhookEndpointsAnswerEveryErrorInOrder (§19): 401, 400, 403, 422 at
// each field, 404, and 422 too_many past 20 endpoints; nothing refused is
// stored.
func TestWebhookEndpointsAnswerEveryErrorInOrder(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	reader := e.Key(config.PermWebhooksRead)
	writer := e.Key(config.PermWebhooksWrite)
	good := map[string]any{"url": "https://hooks.shop.example/k", "events": []string{"*"}}
	with := func(k string, v any) map[string]any {
		m := map[string]any{"url": good["url"], "events": good["events"]}
		m[k] = v
		return m
	}
	id := createEndpoint(t, e, "https://hooks.shop.example/one", "plan.applied")["id"].(string)
	missing := "whe_01m4qpqtywfs7930tb6kqn5rc5"
	cases := []struct {
		name, method, path, secret string
		body                       any
		status                     int
		code                       string
		pointers                   []string
	}{
		{"no key", "POST", "/v1/webhook-endpoints", "-", good, 401, "unauthenticated", nil},
		{"not JSON", "POST", "/v1/webhook-endpoints", "", "{", 400, "malformed_request", nil},
		{"unknown field", "POST", "/v1/webhook-endpoints", "", with("secret", "x"), 400, "unknown_field", []string{"/secret"}},
		{"status at creation", "POST", "/v1/webhook-endpoints", "", with("status", "disabled"), 400, "unknown_field", []string{"/status"}},
		{"events not a list", "POST", "/v1/webhook-endpoints", "", with("events", "*"), 400, "malformed_request", []string{"/events"}},
		{"read key creates", "POST", "/v1/webhook-endpoints", reader, good, 403, "insufficient_permissions", nil},
		{"write key lists", "GET", "/v1/webhook-endpoints", writer, nil, 403, "insufficient_permissions", nil},
		{"write key reads", "GET", "/v1/webhook-endpoints/" + id, writer, nil, 403, "insufficient_permissions", nil},
		{"read key deletes", "DELETE", "/v1/webhook-endpoints/" + id, reader, nil, 403, "insufficient_permissions", nil},
		{"read key rotates", "POST", "/v1/webhook-endpoints/" + id + ":rotate-secret", reader, nil, 403, "insufficient_permissions", nil},
		{"nothing", "POST", "/v1/webhook-endpoints", "", map[string]any{}, 422, "validation_failed", []string{"/url", "/events"}},
		{"http", "POST", "/v1/webhook-endpoints", "", with("url", "http://hooks.shop.example/k"), 422, "validation_failed", []string{"/url"}},
		{"not a URL", "POST", "/v1/webhook-endpoints", "", with("url", "hooks.shop.example"), 422, "validation_failed", []string{"/url"}},
		{"credentials", "POST", "/v1/webhook-endpoints", "", with("url", "https://u:p@hooks.shop.example/k"), 422, "validation_failed", []string{"/url"}},
		{"loopback", "POST", "/v1/webhook-endpoints", "", with("url", "https://127.0.0.1/k"), 422, "validation_failed", []string{"/url"}},
		{"loopback v6", "POST", "/v1/webhook-endpoints", "", with("url", "https://[::1]:8443/k"), 422, "validation_failed", []string{"/url"}},
		{"mapped loopback", "POST", "/v1/webhook-endpoints", "", with("url", "https://[::ffff:127.0.0.1]/k"), 422, "validation_failed", []string{"/url"}},
		{"private", "POST", "/v1/webhook-endpoints", "", with("url", "https://10.1.2.3/k"), 422, "validation_failed", []string{"/url"}},
		{"link-local", "POST", "/v1/webhook-endpoints", "", with("url", "https://169.254.169.254/latest"), 422, "validation_failed", []string{"/url"}},
		{"unspecified", "POST", "/v1/webhook-endpoints", "", with("url", "https://0.0.0.0/k"), 422, "validation_failed", []string{"/url"}},
		{"multicast", "POST", "/v1/webhook-endpoints", "", with("url", "https://224.0.0.1/k"), 422, "validation_failed", []string{"/url"}},
		{"no events", "POST", "/v1/webhook-endpoints", "", with("events", []string{}), 422, "validation_failed", []string{"/events"}},
		{"unknown and repeated types", "POST", "/v1/webhook-endpoints", "", with("events", []string{"plan.applied", "plan.deleted", "plan.applied"}),
			422, "validation_failed", []string{"/events/1", "/events/2"}},
		{"star beside a type", "POST", "/v1/webhook-endpoints", "", with("events", []string{"*", "plan.applied"}), 422, "validation_failed", []string{"/events/0"}},
		{"description too long", "POST", "/v1/webhook-endpoints", "", with("description", strings.Repeat("é", 1001)), 422, "validation_failed", []string{"/description"}},
		{"description with a newline", "POST", "/v1/webhook-endpoints", "", with("description", "a\nb"), 422, "validation_failed", []string{"/description"}},
		{"bad status", "PATCH", "/v1/webhook-endpoints/" + id, "", map[string]any{"status": "paused"}, 422, "validation_failed", []string{"/status"}},
		{"null url", "PATCH", "/v1/webhook-endpoints/" + id, "", map[string]any{"url": nil}, 400, "malformed_request", []string{"/url"}},
		{"description not a string", "PATCH", "/v1/webhook-endpoints/" + id, "", map[string]any{"description": 3}, 400, "malformed_request", []string{"/description"}},
		{"GET unknown", "GET", "/v1/webhook-endpoints/" + missing, "", nil, 404, "not_found", nil},
		{"GET not an id", "GET", "/v1/webhook-endpoints/nope", "", nil, 404, "not_found", nil},
		{"PATCH unknown", "PATCH", "/v1/webhook-endpoints/" + missing, "", map[string]any{"status": "disabled"}, 404, "not_found", nil},
		{"DELETE unknown", "DELETE", "/v1/webhook-endpoints/" + missing, "", nil, 404, "not_found", nil},
		{"rotate unknown", "POST", "/v1/webhook-endpoints/" + missing + ":rotate-secret", "", nil, 404, "not_found", nil},
		{"unknown verb", "POST", "/v1/webhook-endpoints/" + id + ":rotate", "", nil, 404, "not_found", nil},
		{"rotate with a field", "POST", "/v1/webhook-endpoints/" + id + ":rotate-secret", "", map[string]any{"x": 1}, 400, "unknown_field", []string{"/x"}},
	}
	for _, c := range cases {
		r := e.Do(apitest.Request{Method: c.method, Path: c.path, Secret: c.secret, Body: c.body})
		if r.Status != c.status || r.Code() != c.code || r.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.Status, r.Body, c.status, c.code)
			continue
		}
		if c.pointers != nil && !cmp.Equal(pointers(r), c.pointers) {
			t.Errorf("%s: pointers %v, want %v", c.name, pointers(r), c.pointers)
		}
	}
	var n int64
	e.GormDB().Model(&configdb.WebhookEndpointRow{}).Count(&n)
	if n != 1 {
		t.Fatalf("%d endpoints stored, want 1", n)
	}
	for i := 1; i < plans.MaxWebhookEndpoints; i++ {
		createEndpoint(t, e, "https://hooks.shop.example/more", "*")
	}
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/webhook-endpoints", Body: good})
	if r.Status != http.StatusUnprocessableEntity || r.Code() != "too_many" {
		t.Fatalf("the 21st endpoint: %d %s", r.Status, r.Body)
	}
}

// TestWebhookURLRulesFollowTheVariables (§19): with http and private
// addresses allowed (keenauthd dev), a local receiver is accepted.
func TestWebhookURLRulesFollowTheVariables(t *testing.T) {
	t.Parallel()
	e := webhookEnv(t, apitest.Options{})
	createEndpoint(t, e, "http://127.0.0.1:9/hook", "*")
	createEndpoint(t, e, "https://10.0.0.8/hook", "*")
}

// TestOutboxWritesADeliveryForEveryAnnouncedEventInItsTransaction (§19):
// every plan event but apply_started gets one delivery per enabled endpoint
// whose events match it, of its webhook type, pending and due at once; a
// disabled endpoint gets none.
func TestOutboxWritesADeliveryForEveryAnnouncedEventInItsTransaction(t *testing.T) {
	t.Parallel()
	e := webhookEnv(t, apitest.Options{})
	all := createEndpoint(t, e, "https://hooks.shop.example/all", "*")["id"].(string)
	applied := createEndpoint(t, e, "https://hooks.shop.example/applied", "plan.applied", "plan.rejected")["id"].(string)
	off := createEndpoint(t, e, "https://hooks.shop.example/off", "*")["id"].(string)
	e.Do(apitest.Request{Method: "PATCH", Path: "/v1/webhook-endpoints/" + off, Body: map[string]any{"status": "disabled"}})

	planA := createPlanAs(t, e, e.Secret, apiDoc("orders", 60))
	stale := createPlanAs(t, e, e.Secret, apiDoc("orders", 90))
	e.Apply(planA, nil)
	e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + stale + ":apply"})
	e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + stale + ":rebase"})

	evs := envEvents(t, e)
	var want, got []string
	for _, ev := range evs {
		typ, ok := plans.WebhookType(ev.Type)
		if !ok {
			continue
		}
		want = append(want, all+" "+ev.ID+" "+typ)
		if typ == "plan.applied" {
			want = append(want, applied+" "+ev.ID+" "+typ)
		}
	}
	for _, d := range deliveryRows(t, e) {
		got = append(got, d.EndpointID+" "+d.EventID+" "+d.EventType)
		if d.Status != configdb.DeliveryPending || d.Attempts != 0 || d.NextAttemptAt == nil || !config.ValidID(plans.PrefixWebhookMessage, d.ID) ||
			!strings.HasPrefix(d.ID[4:], "") {
			t.Errorf("delivery %+v", d)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deliveries (-want +got):\n%s", diff)
	}
	if len(want) < 6 {
		t.Fatalf("only %d deliveries expected: the scenario did not run", len(want))
	}
}

// TestOutboxTriggerMapsEveryEventTypeAsWebhookTypeDoes: the trigger's table
// of types is plans.WebhookType's, for the ten plan events.
func TestOutboxTriggerMapsEveryEventTypeAsWebhookTypeDoes(t *testing.T) {
	t.Parallel()
	e := webhookEnv(t, apitest.Options{})
	all := createEndpoint(t, e, "https://hooks.shop.example/all", "*")["id"].(string)
	plan := createPlanAs(t, e, e.Secret, apiDoc("orders", 60))
	eventTypes := []string{"plan_created", "plan_approved", "plan_rejected", "apply_started", "apply_succeeded", "apply_rejected",
		"apply_conflicted", "federation_failed", "plan_expired", "plan_rebased"}
	byEvent := map[string]string{}
	for _, typ := range eventTypes {
		ev := configdb.PlanEventRow{EnvironmentID: e.EnvID, PlanID: plan, ID: config.NewID(config.PrefixEvent), Type: typ,
			CreatedAt: e.Clock.Now(), APIKeyID: "key_01m4qpqtywfs7930tb6kqn5rc5", RequestID: "req_01m4qpqtywfs7930tb6kqn5rc5", Data: configdb.JSON("{}")}
		if err := e.GormDB().Create(&ev).Error; err != nil {
			t.Fatalf("insert %s: %v", typ, err)
		}
		byEvent[ev.ID] = typ
	}
	got := map[string]string{}
	for _, d := range deliveryRows(t, e) {
		if typ, ok := byEvent[d.EventID]; ok && d.EndpointID == all {
			got[typ] = d.EventType
		}
	}
	for _, typ := range eventTypes {
		want, ok := plans.WebhookType(typ)
		if got[typ] != want || (!ok && got[typ] != "") {
			t.Errorf("%s: the trigger wrote %q, WebhookType says %q", typ, got[typ], want)
		}
	}
}

// TestRolledBackApplyAnnouncesNothing (§19): an apply whose transaction
// fails at its commit, after its apply_succeeded event was written, leaves
// no delivery of it.
func TestRolledBackApplyAnnouncesNothing(t *testing.T) {
	t.Parallel()
	e := webhookEnv(t, apitest.Options{})
	e.RequirePostgres() // a failure at COMMIT: SQLite's triggers cannot defer one
	createEndpoint(t, e, "https://hooks.shop.example/all", "*")
	id := createPlanAs(t, e, e.Secret, apiDoc("orders", 60))
	// The commit fails as when the database goes away at that moment
	// (53300: 503 service_unavailable).
	for _, stmt := range []string{`CREATE FUNCTION zz_fail() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'the test refuses the commit' USING ERRCODE = '53300'; END $$`,
		`CREATE CONSTRAINT TRIGGER zz_fail_apply AFTER INSERT ON plan_events DEFERRABLE INITIALLY DEFERRED
		FOR EACH ROW WHEN (NEW.type = 'apply_succeeded') EXECUTE FUNCTION zz_fail()`} {
		if err := e.GormDB().Exec(stmt).Error; err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply"})
	if r.Status != http.StatusServiceUnavailable {
		t.Fatalf("the apply: %d %s, want 503", r.Status, r.Body)
	}
	var applied int64
	e.GormDB().Model(&configdb.PlanEventRow{}).Where("type = 'apply_succeeded'").Count(&applied)
	if applied != 0 {
		t.Fatalf("%d apply_succeeded events committed", applied)
	}
	for _, d := range deliveryRows(t, e) {
		if d.EventType == "plan.applied" {
			t.Errorf("a rolled-back apply was announced: %+v", d)
		}
	}
	if n := len(deliveryRows(t, e)); n == 0 {
		t.Fatal("not even plan.created was announced")
	}
}

// TestWebhookPostsTakeAnIdempotencyKey (§9 on every POST, §19): a create
// retried with the same Idempotency-Key replays the first answer (one
// endpoint, the same secret), a rotation likewise (one rotation), another
// body under the key is 422 idempotency_key_mismatch, a bad key 400.
func TestWebhookPostsTakeAnIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	body := map[string]any{"url": "https://hooks.shop.example/once", "events": []string{"*"}}
	post := func(path string, body any, key string) *apitest.Response {
		return e.Do(apitest.Request{Method: "POST", Path: path, Body: body, Header: map[string]string{"Idempotency-Key": key}})
	}
	first := post("/v1/webhook-endpoints", body, "create-1")
	again := post("/v1/webhook-endpoints", body, "create-1")
	if first.Status != http.StatusCreated || again.Status != http.StatusCreated || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("create, then again: %d %s / %d %q %s", first.Status, first.Body, again.Status, again.Header.Get("Idempotent-Replayed"), again.Body)
	}
	if string(first.Body) != string(again.Body) {
		t.Errorf("the replay differs:\n%s\n%s", first.Body, again.Body)
	}
	var n int64
	if err := e.GormDB().Table("webhook_endpoints").Where("environment_id = ?", e.EnvID).Count(&n).Error; err != nil || n != 1 {
		t.Fatalf("endpoints after a retried create: %d (%v), want 1", n, err)
	}
	if r := post("/v1/webhook-endpoints", map[string]any{"url": "https://hooks.shop.example/other"}, "create-1"); r.Status != http.StatusUnprocessableEntity ||
		r.JSON()["code"] != "idempotency_key_mismatch" {
		t.Errorf("another body under the key: %d %s", r.Status, r.Body)
	}
	if r := post("/v1/webhook-endpoints", body, strings.Repeat("k", 256)); r.Status != http.StatusBadRequest || r.JSON()["code"] != "invalid_idempotency_key" {
		t.Errorf("a key of 256 characters: %d %s", r.Status, r.Body)
	}

	id := first.JSON()["id"].(string)
	rot := post("/v1/webhook-endpoints/"+id+":rotate-secret", nil, "rotate-1")
	rotAgain := post("/v1/webhook-endpoints/"+id+":rotate-secret", nil, "rotate-1")
	if rot.Status != http.StatusOK || rotAgain.Status != http.StatusOK || rotAgain.Header.Get("Idempotent-Replayed") != "true" ||
		rot.JSON()["secret"] != rotAgain.JSON()["secret"] || rot.JSON()["secret"] == first.JSON()["secret"] {
		t.Fatalf("rotate, then again: %d %s / %d %s", rot.Status, rot.Body, rotAgain.Status, rotAgain.Body)
	}
	var entries int64
	if err := e.GormDB().Table("management_logs").Where("environment_id = ? AND type = ?", e.EnvID, "webhook_endpoint.secret_rotated").
		Count(&entries).Error; err != nil || entries != 1 {
		t.Errorf("rotations logged: %d (%v), want 1", entries, err)
	}
}
