package api_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/test/apitest"
)

// canary is the client secret of the canary suite: it must reach the
// federation service and nothing else.
const canary = "canary-7f3a9b-SECRET-VALUE"

// canaryForms lists the canary as sent and in the encodings a store, a log
// or a library might keep it in: base64 (standard and URL, padded or not,
// at each of the three byte alignments inside a longer value) and hex.
func canaryForms() []string {
	b := []byte(canary)
	forms := []string{canary, hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b))}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		forms = append(forms, enc.EncodeToString(b))
		for k := range 3 {
			s := enc.WithPadding(base64.NoPadding).EncodeToString(append(make([]byte, k), b...))
			// Drop the characters that also encode the prefix, and the last
			// two, which depend on what follows.
			forms = append(forms, s[(8*k+5)/6:len(s)-2])
		}
	}
	return forms
}

// canaryFind returns, for every form of the canary in s, where it is
// (source, with some context).
func canaryFind(source, s string) []string {
	var found []string
	for _, f := range canaryForms() {
		if i := strings.Index(s, f); i >= 0 {
			from, to := max(i-80, 0), min(i+len(f)+80, len(s))
			found = append(found, fmt.Sprintf("%s: %q in …%s…", source, f, s[from:to]))
		}
	}
	return found
}

// canaryRecorder keeps every answer of the suite.
type canaryRecorder struct {
	e  *apitest.Env
	mu sync.Mutex
	rs []*apitest.Response
}

func (c *canaryRecorder) do(r apitest.Request) *apitest.Response {
	c.e.T.Helper()
	resp := c.e.Do(r)
	c.mu.Lock()
	c.rs = append(c.rs, resp)
	c.mu.Unlock()
	return resp
}

// apply applies a plan and requires the status.
func (c *canaryRecorder) apply(t *testing.T, planID string, body any, status int, header map[string]string) *apitest.Response {
	t.Helper()
	r := c.do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + planID + ":apply", Body: body, Header: header})
	if r.Status != status {
		t.Fatalf("apply %s: %d, want %d: %s", planID, r.Status, status, r.Body)
	}
	return r
}

// plan creates a plan of doc.
func (c *canaryRecorder) plan(t *testing.T, doc map[string]any) string {
	t.Helper()
	r := c.do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{"config": doc}})
	if r.Status != http.StatusCreated {
		t.Fatalf("plan: %d %s", r.Status, r.Body)
	}
	return r.JSON()["id"].(string)
}

// canaryScan looks for the canary in a dump of the test database, in every
// Redis key and value of the test's prefix, in the logs and in every answer
// recorded. On the embedded backend it reads the SQLite files instead (the
// in-process stores keep no file).
func canaryScan(t *testing.T, e *apitest.Env, rec *canaryRecorder) []string {
	t.Helper()
	if apitest.Embedded() {
		var found []string
		for _, suffix := range []string{"", "-wal", "-journal"} {
			b, err := os.ReadFile(e.DB.Name + suffix)
			if err != nil && (suffix == "" || !errors.Is(err, fs.ErrNotExist)) {
				t.Fatalf("read the SQLite database: %v", err)
			}
			found = append(found, canaryFind("sqlite "+e.DB.Name+suffix, string(b))...)
		}
		return append(found, canaryFindOutside(e, rec)...)
	}
	var found []string
	out, err := exec.Command("pg_dump", "--dbname="+e.DB.URL).CombinedOutput()
	if err != nil {
		t.Fatalf("pg_dump %s: %v\n%s", e.DB.Name, err, out)
	}
	if !strings.Contains(string(out), "CREATE TABLE public.config_plans") {
		t.Fatalf("pg_dump gave no schema:\n%.500s", out)
	}
	found = append(found, canaryFind("pg_dump "+e.DB.Name, string(out))...)

	ctx := context.Background()
	iter := e.Redis.Scan(ctx, 0, e.Prefix+"*", 1000).Iterator()
	keys := 0
	for iter.Next(ctx) {
		keys++
		key := iter.Val()
		var b strings.Builder
		b.WriteString(key + "\n")
		if dump, err := e.Redis.Dump(ctx, key).Result(); err == nil {
			b.WriteString(dump + "\n")
		}
		typ, err := e.Redis.Type(ctx, key).Result()
		if err != nil {
			t.Fatalf("TYPE %s: %v", key, err)
		}
		switch typ {
		case "string":
			b.WriteString(e.Redis.Get(ctx, key).Val())
		case "hash":
			for k, v := range e.Redis.HGetAll(ctx, key).Val() {
				b.WriteString(k + "=" + v + "\n")
			}
		case "zset":
			for _, z := range e.Redis.ZRangeWithScores(ctx, key, 0, -1).Val() {
				b.WriteString(fmt.Sprint(z.Member, " ", z.Score, "\n"))
			}
		case "set":
			b.WriteString(strings.Join(e.Redis.SMembers(ctx, key).Val(), "\n"))
		case "list":
			b.WriteString(strings.Join(e.Redis.LRange(ctx, key, 0, -1).Val(), "\n"))
		}
		found = append(found, canaryFind("redis "+key, b.String())...)
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("SCAN: %v", err)
	}
	if keys == 0 {
		t.Fatalf("no Redis key under %s: the scan would prove nothing", e.Prefix)
	}

	return append(found, canaryFindOutside(e, rec)...)
}

// canaryFindOutside looks for the canary in the logs and in every answer
// recorded.
func canaryFindOutside(e *apitest.Env, rec *canaryRecorder) []string {
	found := canaryFind("logs", e.Logs.String())
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, r := range rec.rs {
		var b strings.Builder
		for k, vs := range r.Header {
			b.WriteString(k + ": " + strings.Join(vs, ", ") + "\n")
		}
		b.Write(r.Body)
		found = append(found, canaryFind(fmt.Sprintf("response %d (%d)", i, r.Status), b.String())...)
	}
	return found
}

// TestSecretCanaryLeavesNoTrace runs applies, rejections of every kind,
// replays, validate_only, a restore and connection tests with one client
// secret, then looks for it everywhere this service keeps or shows
// anything: the database, Redis, the logs, the answers and the plan
// events. Only the federation service, its destination, may hold it.
func TestSecretCanaryLeavesNoTrace(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	rec := &canaryRecorder{e: e}
	name := config.SecretRef("acme-sso")
	good := map[string]any{"resolved_secrets": map[string]any{name: canary}, "sp_host": secHost}
	withSecrets := func(secrets map[string]any, host any) map[string]any {
		b := map[string]any{"resolved_secrets": secrets}
		if host != nil {
			b["sp_host"] = host
		}
		return b
	}
	doc := func(active bool, clientID string) map[string]any {
		return connDoc(map[string]any{"acme-sso": oidcConn("ACME", active, clientID)})
	}

	// Every refusal of the request, with the canary in the body.
	p1 := rec.plan(t, doc(false, "v1"))
	many := map[string]any{}
	for i := range 5001 {
		many[fmt.Sprintf("KEENAUTH_C%d", i)] = canary
	}
	for _, body := range []any{
		withSecrets(map[string]any{name: canary, "KEENAUTH_UNUSED": canary}, secHost), // secret_unused
		withSecrets(map[string]any{name: strings.Repeat(canary, 400)}, secHost),       // secret_invalid: too long
		withSecrets(map[string]any{name: map[string]any{"value": canary}}, secHost),   // secret_invalid: not a string
		withSecrets(map[string]any{name: []any{canary}}, secHost),                     // secret_invalid: not a string
		withSecrets(map[string]any{name: canary, "not-a-name": canary}, secHost),      // invalid name
		withSecrets(map[string]any{"KEENAUTH_OTHER": canary}, secHost),                // secret_missing
		withSecrets(map[string]any{name: canary}, nil),                                // sp_host_required
		withSecrets(map[string]any{name: canary}, "Not A Host"),                       // sp_host invalid
		withSecrets(many, secHost),                                                    // too_many
		map[string]any{"resolved_secrets": map[string]any{name: canary}, "confirm_deletions": []any{canary}, "sp_host": secHost},
	} {
		r := rec.apply(t, p1, body, http.StatusUnprocessableEntity, nil)
		if r.Code() != "validation_failed" {
			t.Fatalf("refusal = %s", r.Body)
		}
	}
	for _, body := range []string{
		`{"resolved_secrets": {"` + name + `": "` + canary + `"}, "sp_host": 42}`,
		`{"resolved_secrets": {"` + name + `": "` + canary + `"}, "client_secret": "` + canary + `"}`,
		`{"resolved_secrets": {"` + name + `": "` + canary + `"`,
		`{"resolved_secrets": "` + canary + `"}`,
	} {
		rec.apply(t, p1, body, http.StatusBadRequest, nil)
	}
	// A refusal with an Idempotency-Key is stored, then replayed.
	key422 := map[string]string{"Idempotency-Key": "canary-422"}
	rec.apply(t, p1, withSecrets(map[string]any{name: canary}, nil), http.StatusUnprocessableEntity, key422)
	if r := rec.apply(t, p1, withSecrets(map[string]any{name: canary}, nil), http.StatusUnprocessableEntity, key422); r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("422 not replayed")
	}
	// validate_only runs every check and writes nothing.
	if r := rec.do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + p1 + ":apply?validate_only=true", Body: good}); r.Status != http.StatusOK {
		t.Fatalf("validate_only: %d %s", r.Status, r.Body)
	}

	// The federation service refuses the material (its answer quoting the
	// secret), then is unavailable (its answer quoting it too), then does
	// not answer in time: each time a new plan writes only the material.
	e.Fed.Next(1).FailWith(http.StatusUnprocessableEntity,
		`{"errors": [{"pointer": "/client_secret", "code": "`+canary+`"}, {"pointer": "/issuer/`+canary+`", "code": "invalid"}]}`)
	r := rec.apply(t, p1, good, http.StatusUnprocessableEntity, map[string]string{"Idempotency-Key": "canary-fed-422"})
	if got := secProblems(t, r); !slices.Equal(got, []string{"/changes/0/spec/oidc invalid", "/resolved_secrets/" + name + " invalid"}) {
		t.Fatalf("federation 422 = %v", got)
	}
	conID := secConnID(t, e, "acme-sso")
	p2 := rec.plan(t, doc(false, "v1"))
	e.Fed.Next(3).FailWith(http.StatusServiceUnavailable, `{"error": "cannot store `+canary+`"}`)
	rec.apply(t, p2, good, http.StatusServiceUnavailable, map[string]string{"Idempotency-Key": "canary-fed-503"})
	e.Fed.Clear()
	// The same key again runs again (a 503 is not stored): the plan has moved.
	rec.apply(t, p2, good, http.StatusConflict, map[string]string{"Idempotency-Key": "canary-fed-503"})

	// The apply that succeeds, with an Idempotency-Key and the secret in the
	// body; its replay; the key with another body.
	p3 := rec.plan(t, doc(false, "v1"))
	key := map[string]string{"Idempotency-Key": "canary-apply"}
	first := rec.apply(t, p3, good, http.StatusOK, key)
	replay := rec.apply(t, p3, good, http.StatusOK, key)
	if replay.Header.Get("Idempotent-Replayed") != "true" || string(replay.Body) != string(first.Body) {
		t.Fatalf("replay: %v %s", replay.Header, replay.Body)
	}
	other := withSecrets(map[string]any{name: canary + "-other"}, secHost)
	if r := rec.apply(t, p3, other, http.StatusUnprocessableEntity, key); r.Code() != "idempotency_key_mismatch" {
		t.Fatalf("mismatch = %s", r.Body)
	}
	if got := e.Fed.SecretOf(e.EnvID, conID); got != canary {
		t.Fatalf("the federation service holds %q, not the canary: the scan would look for the wrong value", got)
	}

	// A social connection's own credentials: 501 after the checks.
	social := rec.plan(t, connDoc(map[string]any{"gh": map[string]any{"type": "social", "display_name": "GitHub", "active": false,
		"social": map[string]any{"provider": "github", "use_own_credentials": true, "client_id": "gh"}}}))
	rec.apply(t, social, withSecrets(map[string]any{config.SecretRef("gh"): canary}, nil), http.StatusNotImplemented,
		map[string]string{"Idempotency-Key": "canary-501"})

	// Connection tests, activation, a change of material and its restore.
	for _, path := range []string{"/v1/connections/acme-sso:test", "/v1/connections/gh:test", "/v1/connections/nope:test"} {
		rec.do(apitest.Request{Method: "POST", Path: path})
	}
	rec.apply(t, rec.plan(t, doc(true, "v1")), map[string]any{}, http.StatusOK, nil)
	rec.apply(t, rec.plan(t, doc(false, "v1")), map[string]any{}, http.StatusOK, nil)
	rec.apply(t, rec.plan(t, doc(true, "v2")), good, http.StatusConflict, nil) // an activation on a stale test
	rec.apply(t, rec.plan(t, doc(false, "v2")), good, http.StatusOK, nil)
	revs := rec.do(apitest.Request{Method: "GET", Path: "/v1/config-revisions"})
	latest := revs.JSON()["data"].([]any)[0].(map[string]any)["id"].(string)
	restore := rec.do(apitest.Request{Method: "POST", Path: "/v1/config-revisions/" + latest + ":restore", Header: map[string]string{"Idempotency-Key": "canary-restore"}})
	if restore.Status != http.StatusCreated {
		t.Fatalf("restore: %d %s", restore.Status, restore.Body)
	}
	restored := restore.JSON()
	if !slices.Equal(restored["required_secrets"].([]any), []any{name}) {
		t.Fatalf("restore plan needs %v", restored["required_secrets"])
	}
	rec.apply(t, restored["id"].(string), good, http.StatusOK, map[string]string{"Idempotency-Key": "canary-restore-apply"})
	if m, _ := e.Fed.Material(e.EnvID, conID); m.ClientID != "v1" || e.Fed.SecretOf(e.EnvID, conID) != canary {
		t.Fatalf("restored material = %+v", m)
	}
	rec.do(apitest.Request{Method: "POST", Path: "/v1/connections/acme-sso:test"})

	// Read back everything the suite made.
	plansPage := rec.do(apitest.Request{Method: "GET", Path: "/v1/config-plans?limit=100"})
	for _, p := range plansPage.JSON()["data"].([]any) {
		id := p.(map[string]any)["id"].(string)
		rec.do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id})
		if r := rec.do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id + "/events?limit=100"}); r.Status != http.StatusOK {
			t.Fatalf("events: %d %s", r.Status, r.Body)
		}
	}
	for _, rv := range rec.do(apitest.Request{Method: "GET", Path: "/v1/config-revisions?limit=100"}).JSON()["data"].([]any) {
		rec.do(apitest.Request{Method: "GET", Path: "/v1/config-revisions/" + rv.(map[string]any)["id"].(string)})
	}
	rec.do(apitest.Request{Method: "GET", Path: "/v1/management-logs?limit=100"})
	rec.do(apitest.Request{Method: "GET", Path: "/v1/config"})

	// The scan recognises each form of the canary.
	for _, f := range canaryForms() {
		if len(canaryFind("probe", "<"+f+">")) == 0 {
			t.Fatalf("the scan misses the form %q", f)
		}
	}
	if found := canaryScan(t, e, rec); len(found) > 0 {
		t.Fatalf("the client secret left a trace:\n%s", strings.Join(found, "\n"))
	}
	// The federation service, the destination, holds it; the secret went
	// nowhere else than in PUT bodies.
	for _, c := range e.Fed.Calls() {
		if c.Method != http.MethodPut && len(canaryFind("federation call", c.Path+string(c.Body))) > 0 {
			t.Fatalf("the secret was sent in %s %s", c.Method, c.Path)
		}
	}

	// The scan finds what it looks for: a canary put in a Redis key of the
	// test and one put in the database (after the real scan, so that the
	// database's own history of the probe cannot be mistaken for a leak).
	ctx := context.Background()
	scratch := e.Prefix + "scratch"
	if !apitest.Embedded() {
		if err := e.Redis.Set(ctx, scratch, "x"+base64.URLEncoding.EncodeToString([]byte("!"+canary)), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.GormDB().Exec("CREATE TABLE canary_scratch (v bytea)").Error; err != nil {
		t.Fatal(err)
	}
	insert := "INSERT INTO canary_scratch VALUES (convert_to(?, 'UTF8'))"
	if apitest.Embedded() {
		insert = "INSERT INTO canary_scratch VALUES (CAST(? AS BLOB))"
	}
	if err := e.GormDB().Exec(insert, "<"+canary+">").Error; err != nil {
		t.Fatal(err)
	}
	probe := strings.Join(canaryScan(t, e, rec), "\n")
	switch {
	case apitest.Embedded() && !strings.Contains(probe, "sqlite "):
		t.Fatalf("the scan did not find the canary put in the database:\n%s", probe)
	case !apitest.Embedded() && (!strings.Contains(probe, "redis "+scratch+":") || !strings.Contains(probe, "pg_dump ")):
		t.Fatalf("the scan did not find the canaries put in Redis and the database:\n%s", probe)
	}
}
