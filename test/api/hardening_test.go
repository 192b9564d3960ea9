package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/federation"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/test/apitest"
)

// The API rules of the third security review (§23). The HTTP edge is in
// test/security, over raw connections to the real binary.

// TestIssuerOnAnInternalAddressIs422: an issuer whose host is an IP
// literal, localhost, a single label or an internal name is refused at plan
// creation, and nothing is stored.
func TestIssuerOnAnInternalAddressIs422(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	for _, issuer := range []string{
		"https://169.254.169.254/latest", "https://10.0.0.1", "https://127.0.0.1:6379", "https://localhost", "https://[::1]",
		"https://0.0.0.0", "https://2130706433", "https://0x7f000001", "https://0177.0.0.1", "https://127.1",
		"https://[::ffff:169.254.169.254]", "https://metadata.google.internal", "https://printer.local",
		"https://x.localhost", "https://metadata", "https://１２７.０.０.１",
	} {
		conn := oidcConn("ACME", false, "abc")
		conn["oidc"].(map[string]any)["issuer"] = issuer
		r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{"config": connDoc(map[string]any{"acme": conn})}})
		if r.Status != http.StatusUnprocessableEntity || r.Code() != "validation_failed" {
			t.Errorf("%s: %d %s", issuer, r.Status, r.Body)
			continue
		}
		errs := r.JSON()["errors"].([]any)
		fe := errs[0].(map[string]any)
		if len(errs) != 1 || fe["pointer"] != "/config/connections/acme/oidc/issuer" || fe["code"] != "invalid" ||
			!strings.Contains(fe["detail"].(string), "internal addresses are not allowed") {
			t.Errorf("%s: errors %v", issuer, errs)
		}
	}
	var n int64
	e.GormDB().Table("config_plans").Count(&n)
	if n != 0 {
		t.Errorf("%d plans stored", n)
	}
	e.Plan(connDoc(map[string]any{"acme": oidcConn("ACME", false, "abc")}), false)
}

// hardApplied applies a plan that creates an enterprise connection and
// returns its id.
func hardApplied(t *testing.T, e *apitest.Env) string {
	t.Helper()
	p := e.Plan(connDoc(map[string]any{"acme-sso": oidcConn("ACME", false, "abc")}), false)
	e.Apply(p["id"].(string), applyBody("acme-sso", secSecret))
	return secConnID(t, e, "acme-sso")
}

// TestConnectionTestReasonIsCutTo1024Characters: a failed test's reason is
// kept and returned to its first 1,024 characters.
func TestConnectionTestReasonIsCutTo1024Characters(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	conID := hardApplied(t, e)
	e.Fed.TestResult(e.EnvID, conID, false, strings.Repeat("é", 300_000))
	r := testConn(e, "acme-sso")
	want := strings.Repeat("é", plans.MaxTestReason)
	if r.Status != http.StatusOK || r.JSON()["reason"] != want {
		t.Fatalf("test: %d, reason of %d bytes", r.Status, len(r.Body))
	}
	var stored string
	if err := e.GormDB().Raw("SELECT reason FROM connection_tests WHERE connection_id = ?", conID).Scan(&stored).Error; err != nil || stored != want {
		t.Errorf("stored reason of %d characters (%v)", len([]rune(stored)), err)
	}
}

// TestFederation422KeepsAtMost100Errors: a federation 422 of 300 distinct
// problems, each twice, keeps the first 100 in the answer, the event and the
// idempotency record, with errors_truncated; a smaller one only drops its
// repeats.
func TestFederation422KeepsAtMost100Errors(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	p := e.Plan(connDoc(map[string]any{"acme-sso": oidcConn("ACME", false, "abc")}), false)
	id := p["id"].(string)
	var errs []federation.FieldError
	for i := range 300 {
		fe := federation.FieldError{Pointer: fmt.Sprintf("/scopes/%d", i), Code: "invalid"}
		errs = append(errs, fe, fe)
	}
	e.Fed.Next(1).Reject(errs...)
	body := applyBody("acme-sso", secSecret)
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply", Body: body, Header: map[string]string{"Idempotency-Key": "cap-1"}})
	check := func(what string, m map[string]any) {
		t.Helper()
		list, _ := m["errors"].([]any)
		if len(list) != federation.MaxRejectedErrors || m["errors_truncated"] != true {
			t.Errorf("%s: %d errors, errors_truncated %v", what, len(list), m["errors_truncated"])
			return
		}
		if last := list[99].(map[string]any); last["pointer"] != "/changes/0/spec/oidc/scopes/99" {
			t.Errorf("%s: the 100th error is %v", what, last)
		}
	}
	if r.Status != http.StatusUnprocessableEntity || r.Code() != "validation_failed" {
		t.Fatalf("apply: %d %.300s", r.Status, r.Body)
	}
	check("the answer", r.JSON())
	replay := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply", Body: body, Header: map[string]string{"Idempotency-Key": "cap-1"}})
	if replay.Header.Get("Idempotent-Replayed") != "true" || string(replay.Body) != string(r.Body) {
		t.Errorf("the retry is not the stored answer: %d %.200s", replay.Status, replay.Body)
	}
	events := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id + "/events"})
	var pg struct {
		Data []plans.Event `json:"data"`
	}
	events.Decode(t, &pg)
	found := false
	for _, ev := range pg.Data {
		if ev.Type == "federation_failed" {
			found = true
			check("the event", ev.Data)
		}
	}
	if !found {
		t.Fatalf("no federation_failed event: %s", events.Body)
	}

	// 20 problems, each twice: the 20, without errors_truncated.
	p2 := e.Plan(connDoc(map[string]any{"acme-sso": oidcConn("ACME", false, "abd")}), false)
	e.Fed.Next(1).Reject(errs[:40]...)
	r = secApply(e, p2["id"].(string), body)
	if list, _ := r.JSON()["errors"].([]any); len(list) != 20 || r.JSON()["errors_truncated"] != nil {
		t.Errorf("20 problems twice: %d errors, errors_truncated %v", len(list), r.JSON()["errors_truncated"])
	}
}

// TestIdempotencyRecordHoldsAtMost1MiB: an answer over 1 MiB is not stored,
// so a retry of its key runs again; a smaller one is replayed.
func TestIdempotencyRecordHoldsAtMost1MiB(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	apis := map[string]any{}
	for i := range 400 {
		var scopes []any
		for j := range 8 {
			scopes = append(scopes, map[string]any{"value": fmt.Sprintf("s%d", j), "description": strings.Repeat("d", 250)})
		}
		apis[fmt.Sprintf("api-%d", i)] = map[string]any{"identifier": fmt.Sprintf("https://api.shop.example/%d", i),
			"display_name": fmt.Sprintf("API %d", i), "token_lifetime_seconds": 3600, "scopes": scopes}
	}
	send := func(doc map[string]any, key string) *apitest.Response {
		return e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{"config": doc},
			Header: map[string]string{"Idempotency-Key": key}})
	}
	large := map[string]any{"apis": apis}
	first := send(large, "large-1")
	if first.Status != http.StatusCreated || len(first.Body) <= 1<<20 {
		t.Fatalf("a large plan: %d, %d bytes: %.300s", first.Status, len(first.Body), first.Body)
	}
	again := send(large, "large-1")
	if again.Status != http.StatusCreated || again.Header.Get("Idempotent-Replayed") != "" || again.JSON()["id"] == first.JSON()["id"] {
		t.Errorf("the retry of a %d-byte answer was replayed: %d %s", len(first.Body), again.Status, again.Header.Get("Idempotent-Replayed"))
	}
	small := map[string]any{"apis": map[string]any{"api-0": apis["api-0"]}}
	first = send(small, "small-1")
	again = send(small, "small-1")
	if again.Header.Get("Idempotent-Replayed") != "true" || again.JSON()["id"] != first.JSON()["id"] {
		t.Errorf("the retry of a small answer was not replayed: %d", again.Status)
	}
}

// TestReferrersAreCountedForAKeyThatCannotReadThem: in_use,
// connection_in_use and reference_broken name an application or a role
// only to a key that reads its type.
func TestReferrersAreCountedForAKeyThatCannotReadThem(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	app := func(conns ...string) map[string]any {
		return map[string]any{"display_name": "Portal", "type": "spa", "connections": conns}
	}
	p := e.Plan(map[string]any{"connections": map[string]any{"main": dbConn("Main"), "spare": dbConn("Spare")},
		"apis": map[string]any{"orders": map[string]any{"identifier": "https://api.shop.example/orders", "display_name": "Orders",
			"token_lifetime_seconds": 3600, "scopes": []any{map[string]any{"value": "read"}}}},
		"applications": map[string]any{"portal": app("main")}}, false)
	e.Apply(p["id"].(string), map[string]any{})
	blind := e.Key("config:read", "config:write", "connections:read", "connections:write", "apis:read", "apis:write")

	// Plan creation: 422 in_use.
	del := map[string]any{"config": connDoc(map[string]any{"main": nil})}
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: del, Secret: blind})
	detail := func(r *apitest.Response) string {
		list, _ := r.JSON()["errors"].([]any)
		if len(list) != 1 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		return list[0].(map[string]any)["detail"].(string)
	}
	if d := detail(r); r.Code() != "validation_failed" || strings.Contains(d, "portal") || !strings.Contains(d, "1 application") {
		t.Errorf("in_use to a key without applications:read: %s", d)
	}
	if d := detail(e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: del})); !strings.Contains(d, "application/portal") {
		t.Errorf("in_use to a key with applications:read: %s", d)
	}

	// Apply: 409 connection_in_use, once the connection is used after
	// planning.
	r = e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{"config": connDoc(map[string]any{"spare": nil})}, Secret: blind})
	if r.Status != http.StatusCreated {
		t.Fatalf("plan: %d %s", r.Status, r.Body)
	}
	spare := r.JSON()["id"].(string)
	// And 409 config_conflict reference_broken, once the API is used.
	r = e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{"config": map[string]any{"apis": map[string]any{"orders": nil}}}, Secret: blind})
	if r.Status != http.StatusCreated {
		t.Fatalf("plan: %d %s", r.Status, r.Body)
	}
	orders := r.JSON()["id"].(string)
	p = e.Plan(map[string]any{"applications": map[string]any{"portal": app("main", "spare")},
		"roles": map[string]any{"reader": map[string]any{"display_name": "Reader", "permissions": []any{map[string]any{"api": "orders", "scope": "read"}}}}}, false)
	e.Apply(p["id"].(string), map[string]any{})

	confirm := map[string]any{"confirm_deletions": []any{"connection/spare"}}
	r = e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + spare + ":apply?validate_only=true", Body: confirm, Secret: blind})
	if d := detail(r); r.Code() != "connection_in_use" || strings.Contains(d, "portal") || !strings.Contains(d, "still used by 1 application") {
		t.Errorf("connection_in_use to a key without applications:read: %d %s", r.Status, d)
	}
	r = e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + spare + ":apply?validate_only=true", Body: confirm})
	if d := detail(r); r.Code() != "connection_in_use" || !strings.Contains(d, "application/portal") {
		t.Errorf("connection_in_use to a key with applications:read: %d %s", r.Status, d)
	}
	r = e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + orders + ":apply?validate_only=true", Secret: blind})
	if d := detail(r); r.Code() != "config_conflict" || strings.Contains(d, "reader") || !strings.Contains(d, "1 role") {
		t.Errorf("reference_broken to a key without roles:read: %d %s", r.Status, d)
	}
	r = e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + orders + ":apply?validate_only=true"})
	if d := detail(r); r.Code() != "config_conflict" || !strings.Contains(d, "role/reader") {
		t.Errorf("reference_broken to a key with roles:read: %d %s", r.Status, d)
	}
}

// TestAllowedCallbackHostsHoldAtMost1000Patterns: 1,001 patterns are
// refused whole; 1,000 are kept and checked.
func TestAllowedCallbackHostsHoldAtMost1000Patterns(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	put := func(n int) *apitest.Response {
		hosts := make([]string, n)
		for i := range hosts {
			hosts[i] = fmt.Sprintf("*.h%d.shop.example", i)
		}
		return e.Do(apitest.Request{Method: "PUT", Path: "/internal/v1/environments/" + e.EnvID + "/policies", Secret: apitest.InternalToken,
			Body: map[string]any{"allowed_callback_hosts": hosts}})
	}
	secWant(t, put(config.MaxAllowedCallbackHosts+1), http.StatusUnprocessableEntity, "validation_failed", "/allowed_callback_hosts too_many")
	if r := put(config.MaxAllowedCallbackHosts); r.Status != http.StatusOK {
		t.Fatalf("1,000 patterns: %d %.300s", r.Status, r.Body)
	}
	app := func(host string) map[string]any {
		return map[string]any{"applications": map[string]any{"portal": map[string]any{"display_name": "Portal", "type": "spa",
			"callback_urls": []any{"https://" + host + "/cb"}}}}
	}
	e.Plan(app("a.h999.shop.example"), false)
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{"config": app("h999.shop.example")}})
	secWant(t, r, http.StatusUnprocessableEntity, "policy_conflict", "/config/applications/portal/callback_urls/0 allowed_callback_hosts")
}

// TestInternalIssuerNeverReachesTheFederationService: a spec stored before
// the issuer rule comes back unvalidated in a restore of the revision that
// kept it; its material is refused at its write instead of being sent.
func TestInternalIssuerNeverReachesTheFederationService(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	hardApplied(t, e)
	// The connection as an earlier version could store it.
	var spec string
	db := e.GormDB()
	if err := db.Raw("SELECT spec FROM resources WHERE environment_id = ? AND kind = 'connection' AND key = 'acme-sso'", e.EnvID).Scan(&spec).Error; err != nil {
		t.Fatal(err)
	}
	internal := strings.Replace(spec, "https://idp.acme.example", "https://169.254.169.254", 1)
	update := "UPDATE resources SET spec = CAST(? AS jsonb) WHERE environment_id = ? AND kind = 'connection' AND key = 'acme-sso'"
	if apitest.Embedded() {
		update = "UPDATE resources SET spec = ? WHERE environment_id = ? AND kind = 'connection' AND key = 'acme-sso'"
	}
	if internal == spec || db.Exec(update, internal, e.EnvID).Error != nil {
		t.Fatalf("could not store the issuer in %s", spec)
	}
	// A public issuer now; the revision keeps the internal one.
	moved := oidcConn("ACME", false, "abc")
	moved["oidc"].(map[string]any)["issuer"] = "https://idp2.acme.example"
	p := e.Plan(connDoc(map[string]any{"acme-sso": moved}), false)
	applied := e.Apply(p["id"].(string), applyBody("acme-sso", secSecret))
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-revisions/" + applied["revision_id"].(string) + ":restore"})
	if r.Status != http.StatusCreated {
		t.Fatalf("restore: %d %s", r.Status, r.Body)
	}
	puts := len(fedPuts(e.Fed))
	r = secApply(e, r.JSON()["id"].(string), applyBody("acme-sso", secSecret))
	secWant(t, r, http.StatusUnprocessableEntity, "validation_failed", "/changes/0/spec/oidc/issuer invalid")
	if n := len(fedPuts(e.Fed)); n != puts {
		t.Errorf("the material was sent to the federation service (%d writes, %d before)", n, puts)
	}
}
