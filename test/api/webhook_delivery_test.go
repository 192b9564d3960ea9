package api_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/test/apitest"
)

// receiver is a webhook receiver: it keeps every request, and answers the
// status that answer gives for it (200 when nil).
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []received
	answer func(n int, r received) int
}

type received struct {
	Header http.Header
	Body   []byte
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		got := received{Header: r.Header.Clone(), Body: body}
		rc.got = append(rc.got, got)
		n, answer := len(rc.got), rc.answer
		rc.mu.Unlock()
		status := http.StatusOK
		if answer != nil {
			status = answer(n, got)
		}
		if status >= 300 && status < 400 {
			w.Header().Set("Location", rc.srv.URL+"/elsewhere")
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

func (rc *receiver) setAnswer(f func(n int, r received) int) {
	rc.mu.Lock()
	rc.answer = f
	rc.mu.Unlock()
}

// dispatch runs the harness's dispatcher until the test ends.
func dispatch(t *testing.T, e *apitest.Env) {
	t.Helper()
	d := e.Domain.Webhooks.Dispatcher()
	d.Poll = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// waitFor polls cond for up to timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(timeout); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
	}
}

// verifySignature checks webhook-signature as a receiver would, with its
// own HMAC: it returns how many of the signatures verify with secret.
func verifySignature(t *testing.T, r received, secret string) int {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatalf("secret %q: %v", secret, err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(r.Header.Get("webhook-id") + "." + r.Header.Get("webhook-timestamp") + "."))
	mac.Write(r.Body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	n := 0
	for _, sig := range strings.Split(r.Header.Get("webhook-signature"), " ") {
		if hmac.Equal([]byte(sig), []byte(want)) {
			n++
		}
	}
	return n
}

func deliveries(t *testing.T, e *apitest.Env, endpoint string) []map[string]any {
	t.Helper()
	r := e.Do(apitest.Request{Method: "GET", Path: "/v1/webhook-endpoints/" + endpoint + "/deliveries?limit=100"})
	if r.Status != http.StatusOK {
		t.Fatalf("deliveries: %d %s", r.Status, r.Body)
	}
	var out []map[string]any
	for _, d := range r.JSON()["data"].([]any) {
		out = append(out, d.(map[string]any))
	}
	return out
}

func byType(rs []received, typ string) []received {
	var out []received
	for _, r := range rs {
		var m map[string]any
		_ = json.Unmarshal(r.Body, &m)
		if m["type"] == typ {
			out = append(out, r)
		}
	}
	return out
}

// TestWebhooksAreDeliveredSignedSoonAfterTheCommit (§19): a plan created
// and applied reaches the receiver within 5 s of each commit, as the
// Standard Webhooks convention says, signed with the endpoint's secret
// (checked with the test's own HMAC); the deliveries list says succeeded.
func TestWebhooksAreDeliveredSignedSoonAfterTheCommit(t *testing.T) {
	t.Parallel()
	e := webhookEnv(t, apitest.Options{})
	rc := newReceiver(t)
	dispatch(t, e)
	ep := createEndpoint(t, e, rc.srv.URL+"/hook", "plan.created", "plan.applied")
	id, secret := ep["id"].(string), ep["secret"].(string)
	planID := createPlanAs(t, e, e.Secret, apiDoc("orders", 60))
	committed := time.Now()
	waitFor(t, 5*time.Second, "plan.created delivered", func() bool { return len(byType(rc.requests(), "plan.created")) == 1 })
	if d := time.Since(committed); d > 5*time.Second {
		t.Errorf("delivered %s after the commit", d)
	}
	revision := e.Apply(planID, nil)["revision_id"]
	waitFor(t, 5*time.Second, "plan.applied delivered", func() bool { return len(byType(rc.requests(), "plan.applied")) == 1 })

	for _, r := range rc.requests() {
		if n := verifySignature(t, r, secret); n != 1 {
			t.Errorf("%d signatures verify: %q", n, r.Header.Get("webhook-signature"))
		}
		ts, err := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
		if err != nil || time.Since(time.Unix(ts, 0)).Abs() > time.Minute {
			t.Errorf("webhook-timestamp %q", r.Header.Get("webhook-timestamp"))
		}
		if r.Header.Get("Content-Type") != "application/json" || !strings.HasPrefix(r.Header.Get("User-Agent"), "keenauthd/") ||
			!strings.HasPrefix(r.Header.Get("webhook-id"), "msg_") {
			t.Errorf("headers %v", r.Header)
		}
		var body struct {
			Type      string         `json:"type"`
			Timestamp string         `json:"timestamp"`
			Data      map[string]any `json:"data"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatalf("body %s: %v", r.Body, err)
		}
		plan := body.Data["plan"].(map[string]any)
		if body.Data["plan_id"] != planID || body.Data["environment_id"] != e.EnvID || !strings.HasPrefix(body.Data["event_id"].(string), "evt_") {
			t.Errorf("body %s", r.Body)
		}
		switch body.Type {
		case "plan.created":
			if plan["status"] != "planned" || plan["revision_id"] != nil {
				t.Errorf("plan.created body %s", r.Body)
			}
		case "plan.applied":
			if plan["status"] != "applied" || plan["revision_id"] != revision {
				t.Errorf("plan.applied body %s", r.Body)
			}
		}
		for _, banned := range []string{`"changes"`, `"spec"`, `"diff"`, secret[6:20]} {
			if strings.Contains(string(r.Body), banned) {
				t.Errorf("the body holds %s: %s", banned, r.Body)
			}
		}
	}
	waitFor(t, 5*time.Second, "both recorded", func() bool {
		ds := deliveries(t, e, id)
		return len(ds) == 2 && ds[0]["status"] == "succeeded" && ds[1]["status"] == "succeeded"
	})
	ds := deliveries(t, e, id)
	if ds[0]["event_type"] != "plan.applied" || ds[1]["event_type"] != "plan.created" || ds[0]["attempts"] != 1.0 ||
		ds[0]["last_status_code"] != 200.0 || ds[0]["last_error"] != nil || ds[0]["next_attempt_at"] != nil || ds[0]["plan_id"] != planID {
		t.Errorf("deliveries %v", ds)
	}
	ids := map[string]bool{}
	for _, r := range rc.requests() {
		ids[r.Header.Get("webhook-id")] = true
	}
	if !ids[ds[0]["id"].(string)] || !ids[ds[1]["id"].(string)] {
		t.Errorf("webhook-ids %v, deliveries %v", ids, ds)
	}
}

// TestWebhookRetriesKeepTheirIDAndBodyThenFail (§19): every answer but a
// 2xx — 500, 404, a redirect (never followed) — is retried on the schedule
// with the same webhook-id and body; after the last retry the delivery is
// failed with last_error; :retry queues it again (202), and it succeeds.
// :retry of a delivery that is not failed is 409.
func TestWebhookRetriesKeepTheirIDAndBodyThenFail(t *testing.T) {
	t.Parallel()
	opt := apitest.Options{Plans: plans.DefaultConfig()}
	opt.Plans.Webhooks.RetrySchedule = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}
	e := webhookEnv(t, opt)
	rc := newReceiver(t)
	statuses := []int{500, 302, 404}
	rc.setAnswer(func(n int, _ received) int { return statuses[(n-1)%len(statuses)] })
	dispatch(t, e)
	id := createEndpoint(t, e, rc.srv.URL+"/hook", "plan.created")["id"].(string)
	createPlanAs(t, e, e.Secret, apiDoc("orders", 60))
	waitFor(t, 10*time.Second, "the delivery failed", func() bool {
		ds := deliveries(t, e, id)
		return len(ds) == 1 && ds[0]["status"] == "failed"
	})
	got := rc.requests()
	if len(got) != 3 {
		t.Fatalf("%d attempts, want 3 (one and two retries)", len(got))
	}
	for _, r := range got[1:] {
		if r.Header.Get("webhook-id") != got[0].Header.Get("webhook-id") || string(r.Body) != string(got[0].Body) {
			t.Errorf("a retry changed the id or the body: %s %s", r.Header.Get("webhook-id"), r.Body)
		}
	}
	d := deliveries(t, e, id)[0]
	if d["attempts"] != 3.0 || d["last_status_code"] != 404.0 || !strings.Contains(d["last_error"].(string), "404") || d["next_attempt_at"] != nil {
		t.Errorf("failed delivery %v", d)
	}
	msg := d["id"].(string)
	rc.setAnswer(nil)
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/webhook-endpoints/" + id + "/deliveries/" + msg + ":retry"})
	if r.Status != http.StatusAccepted || r.JSON()["status"] != "pending" || r.JSON()["id"] != msg {
		t.Fatalf(":retry: %d %s", r.Status, r.Body)
	}
	waitFor(t, 5*time.Second, "the retried delivery succeeded", func() bool { return deliveries(t, e, id)[0]["status"] == "succeeded" })
	if last := rc.requests()[3]; last.Header.Get("webhook-id") != msg {
		t.Errorf("the manual retry's webhook-id %q, want %q", last.Header.Get("webhook-id"), msg)
	}
	for _, c := range []struct {
		path, secret string
		status       int
		code         string
	}{
		{"/v1/webhook-endpoints/" + id + "/deliveries/" + msg + ":retry", "", 409, "conflict"},
		{"/v1/webhook-endpoints/" + id + "/deliveries/msg_01m4qpqtywfs7930tb6kqn5rc5:retry", "", 404, "not_found"},
		{"/v1/webhook-endpoints/whe_01m4qpqtywfs7930tb6kqn5rc5/deliveries/" + msg + ":retry", "", 404, "not_found"},
		{"/v1/webhook-endpoints/" + id + "/deliveries/" + msg + ":resend", "", 404, "not_found"},
		{"/v1/webhook-endpoints/" + id + "/deliveries/" + msg + ":retry", e.Key("webhooks:read"), 403, "insufficient_permissions"},
	} {
		r := e.Do(apitest.Request{Method: "POST", Path: c.path, Secret: c.secret})
		if r.Status != c.status || r.Code() != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.path, r.Status, r.Body, c.status, c.code)
		}
	}
	for _, c := range []struct {
		path, secret string
		status       int
	}{
		{"/v1/webhook-endpoints/whe_01m4qpqtywfs7930tb6kqn5rc5/deliveries", "", 404},
		{"/v1/webhook-endpoints/" + id + "/deliveries?cursor=nope", "", 400},
		{"/v1/webhook-endpoints/" + id + "/deliveries", e.Key("webhooks:write"), 403},
	} {
		if r := e.Do(apitest.Request{Method: "GET", Path: c.path, Secret: c.secret}); r.Status != c.status {
			t.Errorf("GET %s: %d %s, want %d", c.path, r.Status, r.Body, c.status)
		}
	}
}

// TestRotatedSecretSignsBesideTheNewOne (§19): after a rotation both
// secrets sign each delivery, for 24 h; then the new one alone.
func TestRotatedSecretSignsBesideTheNewOne(t *testing.T) {
	t.Parallel()
	e := webhookEnv(t, apitest.Options{})
	rc := newReceiver(t)
	dispatch(t, e)
	ep := createEndpoint(t, e, rc.srv.URL+"/hook", "plan.created")
	old := ep["secret"].(string)
	rot := e.Do(apitest.Request{Method: "POST", Path: "/v1/webhook-endpoints/" + ep["id"].(string) + ":rotate-secret"})
	fresh := rot.JSON()["secret"].(string)
	createPlanAs(t, e, e.Secret, apiDoc("orders", 60))
	waitFor(t, 5*time.Second, "delivered", func() bool { return len(rc.requests()) == 1 })
	r := rc.requests()[0]
	if len(strings.Split(r.Header.Get("webhook-signature"), " ")) != 2 || verifySignature(t, r, old) != 1 || verifySignature(t, r, fresh) != 1 {
		t.Fatalf("signatures %q", r.Header.Get("webhook-signature"))
	}
	e.Clock.Advance(24*time.Hour + time.Minute)
	createPlanAs(t, e, e.Secret, apiDoc("users", 60))
	waitFor(t, 5*time.Second, "delivered", func() bool { return len(rc.requests()) == 2 })
	r = rc.requests()[1]
	if verifySignature(t, r, fresh) != 1 || verifySignature(t, r, old) != 0 || strings.Contains(r.Header.Get("webhook-signature"), " ") {
		t.Fatalf("signatures after 24 h %q", r.Header.Get("webhook-signature"))
	}
}

// TestWebhookToANameOfAPrivateAddressFails (§19): a host name is checked at
// each delivery, on the address dialed: localhost is refused, the delivery
// fails with last_error saying why, and the receiver hears nothing.
func TestWebhookToANameOfAPrivateAddressFails(t *testing.T) {
	t.Parallel()
	opt := apitest.Options{Plans: plans.DefaultConfig()}
	opt.Plans.Webhooks.AllowHTTP = true
	opt.Plans.Webhooks.RetrySchedule = []time.Duration{20 * time.Millisecond}
	e := apitest.Setup(t, opt)
	rc := newReceiver(t)
	dispatch(t, e)
	url := strings.Replace(rc.srv.URL, "127.0.0.1", "localhost", 1)
	id := createEndpoint(t, e, url+"/hook", "*")["id"].(string)
	createPlanAs(t, e, e.Secret, apiDoc("orders", 60))
	waitFor(t, 5*time.Second, "failed", func() bool {
		ds := deliveries(t, e, id)
		return len(ds) == 1 && ds[0]["status"] == "failed"
	})
	d := deliveries(t, e, id)[0]
	if le, _ := d["last_error"].(string); !strings.Contains(le, "loopback") || d["last_status_code"] != nil {
		t.Errorf("delivery %v", d)
	}
	if n := len(rc.requests()); n != 0 {
		t.Errorf("the receiver got %d requests", n)
	}
}

// TestDeliveriesFollowThePlanRetention (§16, §19): the sweep deletes the
// deliveries of the plans it deletes, and keeps those of recent plans.
func TestDeliveriesFollowThePlanRetention(t *testing.T) {
	t.Parallel()
	e := webhookEnv(t, apitest.Options{})
	id := createEndpoint(t, e, "https://hooks.shop.example/all", "*")["id"].(string)
	old := createPlanAs(t, e, e.Secret, apiDoc("orders", 60))
	e.Apply(old, nil)
	e.Clock.Advance(91 * 24 * time.Hour)
	recent := createPlanAs(t, e, e.Secret, apiDoc("users", 60))
	if _, err := e.Domain.Retention.Sweep(context.Background(), plans.SweepConfig{PlanRetention: 90 * 24 * time.Hour, Batch: 10}); err != nil {
		t.Fatal(err)
	}
	var plansLeft []string
	for _, d := range deliveries(t, e, id) {
		plansLeft = append(plansLeft, d["plan_id"].(string))
	}
	if len(plansLeft) != 1 || plansLeft[0] != recent {
		t.Errorf("deliveries of %v remain, want only those of %s (not %s)", plansLeft, recent, old)
	}
}

// TestTwoDispatchersNeverClaimADeliveryTwice (§19): the dispatchers of two
// replicas over one database deliver every announcement once — no
// webhook-id posted twice, none missing — while the receiver is slow
// enough that their claims overlap.
func TestTwoDispatchersNeverClaimADeliveryTwice(t *testing.T) {
	t.Parallel()
	e := webhookEnv(t, apitest.Options{})
	opt := apitest.Options{Replica: e, Plans: plans.DefaultConfig()}
	opt.Plans.Webhooks.AllowHTTP, opt.Plans.Webhooks.AllowPrivate = true, true
	replica := apitest.Setup(t, opt)
	rc := newReceiver(t)
	rc.setAnswer(func(int, received) int { time.Sleep(30 * time.Millisecond); return 200 })
	for range 3 {
		createEndpoint(t, e, rc.srv.URL+"/hook", "*")
	}
	const n = 12
	for i := range n {
		createPlanAs(t, e, e.Secret, apiDoc("api"+strconv.Itoa(i), 60))
	}
	dispatch(t, e)
	dispatch(t, replica)
	waitFor(t, 20*time.Second, "every delivery", func() bool { return len(rc.requests()) >= 3*n })
	time.Sleep(300 * time.Millisecond) // a double post would arrive by now
	seen := map[string]int{}
	for _, r := range rc.requests() {
		seen[r.Header.Get("webhook-id")]++
	}
	if len(seen) != 3*n {
		t.Errorf("%d distinct webhook-ids, want %d", len(seen), 3*n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("%s posted %d times", id, k)
		}
	}
}
