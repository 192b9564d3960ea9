package api_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"gorm.io/gorm"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/ratelimit"
	"github.com/keenauth/configplans/service"
	"github.com/keenauth/configplans/test/apitest"
)

// scrape reads /metrics through the router and parses it.
func scrape(t *testing.T, e *apitest.Env) map[string]*dto.MetricFamily {
	t.Helper()
	r := e.Do(apitest.Request{Method: "GET", Path: "/metrics", Secret: "-"})
	if r.Status != http.StatusOK {
		t.Fatalf("/metrics: %d %s", r.Status, r.Body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(r.Body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, r.Body)
	}
	return fams
}

// sample returns the value of the series of name with exactly labels
// (a counter's value, a histogram's count); 0 when there is none.
func sample(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, lp := range m.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		if len(got) != len(labels) {
			continue
		}
		match := true
		for k, v := range labels {
			if got[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

func obsSettings(name string) map[string]any {
	return map[string]any{"environment_settings": map[string]any{"display_name": name, "default_locale": "en", "session_lifetime_hours": 72}}
}

// TestMetricsCountAppliesConflictsAndReplays drives an applied plan, a
// conflicting one and an idempotent replay, and checks each moves its
// counter by exactly one.
func TestMetricsCountAppliesConflictsAndReplays(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{Metrics: true})
	applies := func(f map[string]*dto.MetricFamily, code string) float64 {
		return sample(f, "keenauthd_applies_total", map[string]string{"code": code, "mode": "apply"})
	}

	before := scrape(t, e)
	p1 := e.Plan(obsSettings("Shop 1"), false)
	p2 := e.Plan(obsSettings("Shop 2"), false) // planned at the same versions as p1
	e.Apply(p1["id"].(string), nil)
	after := scrape(t, e)
	if d := applies(after, "applied") - applies(before, "applied"); d != 1 {
		t.Errorf("applied moved by %v, want 1", d)
	}
	if got := sample(after, "keenauthd_apply_duration_seconds", map[string]string{"plan_size": "1"}); got != 1 {
		t.Errorf("apply duration of a 1-change plan observed %v times, want 1", got)
	}
	if d := sample(after, "keenauthd_plan_creations_total", map[string]string{"outcome": "created"}) -
		sample(before, "keenauthd_plan_creations_total", map[string]string{"outcome": "created"}); d != 2 {
		t.Errorf("plan creations moved by %v, want 2", d)
	}

	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + p2["id"].(string) + ":apply", Body: map[string]any{}})
	if r.Status != http.StatusConflict || r.Code() != "config_conflict" {
		t.Fatalf("apply of the stale plan: %d %s", r.Status, r.Body)
	}
	conflicted := scrape(t, e)
	if d := applies(conflicted, "config_conflict") - applies(after, "config_conflict"); d != 1 {
		t.Errorf("config_conflict moved by %v, want 1", d)
	}
	if d := applies(conflicted, "applied") - applies(after, "applied"); d != 0 {
		t.Errorf("applied moved by %v on a conflict, want 0", d)
	}

	p3 := e.Plan(obsSettings("Shop 3"), false)
	key := map[string]string{"Idempotency-Key": "obs-replay-1"}
	for i, want := range []string{"", "true"} {
		r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + p3["id"].(string) + ":apply", Body: map[string]any{}, Header: key})
		if r.Status != http.StatusOK || r.Header.Get("Idempotent-Replayed") != want {
			t.Fatalf("apply %d with the key: %d replayed=%q %s", i, r.Status, r.Header.Get("Idempotent-Replayed"), r.Body)
		}
	}
	replayed := scrape(t, e)
	idem := func(f map[string]*dto.MetricFamily, outcome string) float64 {
		return sample(f, "keenauthd_idempotency_requests_total", map[string]string{"outcome": outcome})
	}
	if d := idem(replayed, "replayed") - idem(conflicted, "replayed"); d != 1 {
		t.Errorf("idempotency replayed moved by %v, want 1", d)
	}
	if d := idem(replayed, "claimed") - idem(conflicted, "claimed"); d != 1 {
		t.Errorf("idempotency claimed moved by %v, want 1", d)
	}

	if r := e.Do(apitest.Request{Method: "GET", Path: "/v1/no-such-thing"}); r.Status != http.StatusNotFound {
		t.Fatalf("unknown path: %d", r.Status)
	}
	last := scrape(t, e)
	if got := sample(last, "keenauthd_http_request_duration_seconds",
		map[string]string{"method": "GET", "route": "unmatched", "status_class": "4xx"}); got != 1 {
		t.Errorf("unmatched 4xx observed %v times, want 1", got)
	}
	if got := sample(last, "keenauthd_http_request_duration_seconds",
		map[string]string{"method": "POST", "route": "/v1/config-plans/:id", "status_class": "2xx"}); got != 3 {
		t.Errorf("POST /v1/config-plans/:id 2xx observed %v times, want 3 (two applies and a replay)", got)
	}
	checkNoIDLabels(t, last, e.EnvID, p1["id"].(string), p2["id"].(string), p3["id"].(string))
}

var idLabel = regexp.MustCompile(`(env|key|cfgp|cfgr|log|con|evt|req|ksk)_[0-9a-z]`)

// checkNoIDLabels fails when a label value holds an id, or a route label
// is not a route template.
func checkNoIDLabels(t *testing.T, fams map[string]*dto.MetricFamily, ids ...string) {
	t.Helper()
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				v := lp.GetValue()
				if idLabel.MatchString(v) {
					t.Errorf("%s{%s=%q}: a label value is an id", name, lp.GetName(), v)
				}
				for _, id := range ids {
					if strings.Contains(v, id) {
						t.Errorf("%s{%s=%q} holds %s", name, lp.GetName(), v, id)
					}
				}
				if lp.GetName() == "route" && v != "unmatched" && !strings.HasPrefix(v, "/") {
					t.Errorf("%s: route %q is not a template", name, v)
				}
			}
		}
	}
}

// TestMetricsCountRateLimitDecisionsByPolicy exhausts a quota of one and
// checks the 429 is counted as limited by config_plan.
func TestMetricsCountRateLimitDecisionsByPolicy(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{Metrics: true, RateLimit: ratelimit.Config{Quota: 1, Window: time.Hour, Inflight: 5}})
	e.Plan(obsSettings("Shop 1"), false)
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{"config": obsSettings("Shop 2")}})
	if r.Status != http.StatusTooManyRequests || r.JSON()["policy"] != "config_plan" {
		t.Fatalf("second plan: %d %s", r.Status, r.Body)
	}
	f := scrape(t, e)
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"decision": "allowed", "policy": ""}, 1},
		{map[string]string{"decision": "limited", "policy": "config_plan"}, 1},
		{map[string]string{"decision": "limited", "policy": "config_plan_inflight"}, 0},
		{map[string]string{"decision": "failed_open", "policy": ""}, 0},
	} {
		if got := sample(f, "keenauthd_rate_limit_decisions_total", c.labels); got != c.want {
			t.Errorf("rate limit %v = %v, want %v", c.labels, got, c.want)
		}
	}
	if got := sample(f, "keenauthd_plan_creations_total", map[string]string{"outcome": "rate_limited"}); got != 1 {
		t.Errorf("plan creations rate_limited = %v, want 1", got)
	}
	checkNoIDLabels(t, f, e.EnvID)
}

const logCanary = "canary-Zq8vXw3LmT-secret"

// logLines parses every captured log line; each must be JSON with a
// well-formed request_id.
func logLines(t *testing.T, e *apitest.Env) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(e.Logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", l)
		}
		if id, _ := m["request_id"].(string); !config.ValidID(config.PrefixRequest, id) {
			t.Errorf("log line without a request_id: %s", l)
		}
		out = append(out, m)
	}
	return out
}

// TestLogsNeverHoldTheSecretOfAnApply applies a plan with a canary secret,
// along with refused requests and a federation outage that carry it, then
// scans every log line.
func TestLogsNeverHoldTheSecretOfAnApply(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	const name = "KEENAUTH_CONNECTION_ACME_SSO_CLIENT_SECRET"
	p := e.Plan(apitest.ExampleDocument(), false)
	id := p["id"].(string)
	path := "/v1/config-plans/" + id + ":apply"
	withSecret := func(extra map[string]any) map[string]any {
		b := map[string]any{"resolved_secrets": map[string]any{name: logCanary}, "sp_host": "login.shop.example"}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	refused := []struct {
		body   any
		status int
	}{
		{withSecret(map[string]any{"bogus": logCanary}), http.StatusBadRequest},
		{`{"resolved_secrets": {"` + name + `": "` + logCanary + `"`, http.StatusBadRequest},
		{withSecret(map[string]any{"resolved_secrets": map[string]any{name: logCanary, "KEENAUTH_OTHER": logCanary}}), http.StatusUnprocessableEntity},
	}
	for _, c := range refused {
		if r := e.Do(apitest.Request{Method: "POST", Path: path, Body: c.body}); r.Status != c.status {
			t.Fatalf("refused apply: %d %s, want %d", r.Status, r.Body, c.status)
		}
	}
	e.Fed.On(http.MethodPut).Unavailable()
	if r := e.Do(apitest.Request{Method: "POST", Path: path, Body: withSecret(nil)}); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("apply during a federation outage: %d %s", r.Status, r.Body)
	}
	e.Fed.Clear()
	cfg, _ := e.Export()
	p2 := e.Plan(cfg, false) // writes the material that is still missing
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + p2["id"].(string) + ":apply", Body: withSecret(nil),
		Header: map[string]string{"Idempotency-Key": "canary-apply"}})
	if r.Status != http.StatusOK {
		t.Fatalf("apply: %d %s", r.Status, r.Body)
	}

	lines := logLines(t, e)
	if strings.Contains(e.Logs.String(), logCanary) {
		t.Fatalf("a log line holds the secret:\n%s", e.Logs.String())
	}
	requests := 0
	for _, m := range lines {
		if m["msg"] == "request" {
			requests++
		}
	}
	// Two plans, four refused or failed applies, the export, the apply.
	if requests < 8 {
		t.Errorf("%d access log lines, want one per request (8)", requests)
	}
	sawFederation := false
	for _, m := range lines {
		if m["msg"] == "federation write failed" {
			sawFederation = true
		}
	}
	if !sawFederation {
		t.Errorf("the federation outage was not logged")
	}
}

// TestRequestIDFlowsIntoLogsEventsAndManagementLog sends a Request-Id and
// a traceparent and finds them where the request left its traces.
func TestRequestIDFlowsIntoLogsEventsAndManagementLog(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	createID, applyID := config.NewID(config.PrefixRequest), config.NewID(config.PrefixRequest)
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{"config": obsSettings("Shop 2")},
		Header: map[string]string{"Request-Id": createID}})
	if r.Status != http.StatusCreated || r.Header.Get("Request-Id") != createID {
		t.Fatalf("create: %d Request-Id %q %s", r.Status, r.Header.Get("Request-Id"), r.Body)
	}
	planID := r.JSON()["id"].(string)
	r = e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + planID + ":apply", Body: map[string]any{},
		Header: map[string]string{"Request-Id": applyID, "traceparent": "00-" + trace + "-00f067aa0ba902b7-01"}})
	if r.Status != http.StatusOK || r.Header.Get("Request-Id") != applyID {
		t.Fatalf("apply: %d Request-Id %q %s", r.Status, r.Header.Get("Request-Id"), r.Body)
	}

	ev := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + planID + "/events"})
	want := map[string]string{"plan_created": createID, "apply_started": applyID, "apply_succeeded": applyID}
	got := map[string]string{}
	for _, x := range ev.JSON()["data"].([]any) {
		m := x.(map[string]any)
		got[m["type"].(string)] = m["request_id"].(string)
	}
	for typ, id := range want {
		if got[typ] != id {
			t.Errorf("event %s request_id = %q, want %q", typ, got[typ], id)
		}
	}
	logs := e.Do(apitest.Request{Method: "GET", Path: "/v1/management-logs"})
	entries := logs.JSON()["data"].([]any)
	if len(entries) == 0 {
		t.Fatalf("no management-log entries: %s", logs.Body)
	}
	for _, x := range entries {
		m := x.(map[string]any)
		if m["request_id"] != applyID {
			t.Errorf("management-log %s request_id = %v, want %s", m["type"], m["request_id"], applyID)
		}
	}

	var access map[string]any
	for _, m := range logLines(t, e) {
		if m["msg"] == "request" && m["request_id"] == applyID {
			access = m
		}
	}
	if access == nil {
		t.Fatalf("no access log line for %s:\n%s", applyID, e.Logs.String())
	}
	for k, v := range map[string]any{"method": "POST", "route": "/v1/config-plans/:id", "status": 200.0, "plan_id": planID,
		"environment_id": e.EnvID, "trace_id": trace} {
		if access[k] != v {
			t.Errorf("access log %s = %v, want %v", k, access[k], v)
		}
	}
	if _, ok := access["duration_ms"].(float64); !ok {
		t.Errorf("access log has no duration_ms: %v", access)
	}
	if k, _ := access["api_key_id"].(string); !config.ValidID(config.PrefixAPIKey, k) {
		t.Errorf("access log api_key_id = %v", access["api_key_id"])
	}
}

// TestMalformedRequestIDAndTraceparentAreNotKept checks that only a
// well-formed Request-Id is echoed and only a valid traceparent is logged.
func TestMalformedRequestIDAndTraceparentAreNotKept(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	for _, c := range []struct{ requestID, traceparent string }{
		{"abc", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"},
		{"req_01HZZZZZZZZZZZZZZZZZZZZZZZ", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"},
		{"req_01hzzzzzzzzzzzzzzzzzzzzzzz\r\nX: y", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		{"key_01hzzzzzzzzzzzzzzzzzzzzzzz", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"},
	} {
		r := e.Do(apitest.Request{Method: "GET", Path: "/healthz", Secret: "-",
			Header: map[string]string{"Request-Id": c.requestID, "traceparent": c.traceparent}})
		got := r.Header.Get("Request-Id")
		if got == c.requestID || !config.ValidID(config.PrefixRequest, got) {
			t.Errorf("Request-Id %q answered %q, want a new one", c.requestID, got)
		}
	}
	if strings.Contains(e.Logs.String(), "trace_id") {
		t.Errorf("an invalid traceparent was logged:\n%s", e.Logs.String())
	}
}

// TestUnknownErrorIsLoggedWithItsCauses makes an apply fail with an
// error outside the contract: the client gets a plain 500, the log line
// has the whole chain of causes and the request's id.
func TestUnknownErrorIsLoggedWithItsCauses(t *testing.T) {
	t.Parallel()
	root := errors.New("disk on fire")
	e := apitest.Setup(t, apitest.Options{DB: configdb.Options{BeforeApplyWrite: func(*gorm.DB) error {
		return fmt.Errorf("write resources: %w", root)
	}}})
	p := e.Plan(obsSettings("Shop 2"), false)
	reqID := config.NewID(config.PrefixRequest)
	req := httptest.NewRequest("POST", "/v1/config-plans/"+p["id"].(string)+":apply", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+e.Secret)
	req.Header.Set("Request-Id", reqID)
	rec := httptest.NewRecorder()
	e.Handler.ServeHTTP(rec, req) // not e.Do: its contract check fails every 500
	if rec.Code != http.StatusInternalServerError || strings.Contains(rec.Body.String(), "disk on fire") {
		t.Fatalf("apply = %d %s, want a 500 that does not tell the cause", rec.Code, rec.Body)
	}
	found := false
	for _, m := range logLines(t, e) {
		errAttr, ok := m["error"].(map[string]any)
		if !ok || m["request_id"] != reqID {
			continue
		}
		causes, _ := errAttr["causes"].([]any)
		if len(causes) == 0 {
			t.Errorf("%s: error without causes: %v", m["msg"], errAttr)
			continue
		}
		innermost := causes[len(causes)-1].(map[string]any)
		if innermost["message"] == "disk on fire" && innermost["type"] == "*errors.errorString" {
			found = true
		}
	}
	if !found {
		t.Errorf("no log line with the cause chain down to the root:\n%s", e.Logs.String())
	}
}

// TestLoggerWritesErrorChainsAndRequestIDsFromContext checks the logger
// of the service on its own.
func TestLoggerWritesErrorChainsAndRequestIDsFromContext(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := service.NewLogger(&buf, slog.LevelInfo)
	log.Debug("hidden")
	log.Error("failed", "error", fmt.Errorf("outer: %w", errors.Join(io.EOF, errors.New("second"))))
	var m map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &m); err != nil {
		t.Fatalf("one JSON line expected: %q", buf.String())
	}
	e := m["error"].(map[string]any)
	if e["message"] != "outer: EOF\nsecond" {
		t.Errorf("error message = %q", e["message"])
	}
	var msgs []string
	for _, c := range e["causes"].([]any) {
		msgs = append(msgs, c.(map[string]any)["message"].(string))
	}
	if want := []string{"outer: EOF\nsecond", "EOF\nsecond", "EOF", "second"}; strings.Join(msgs, "|") != strings.Join(want, "|") {
		t.Errorf("causes = %q, want %q", msgs, want)
	}
}
