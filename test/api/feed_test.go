package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/service"
	"github.com/keenauth/configplans/test/apitest"
)

// settingsDoc is a plan of the environment_settings singleton
// (environment-settings:read), a type apiDoc's readers may not read.
func settingsDoc(name string) map[string]any {
	return map[string]any{"environment_settings": map[string]any{"display_name": name, "default_locale": "en", "session_lifetime_hours": 72}}
}

type feedItem struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      struct {
		EventID string `json:"event_id"`
		PlanID  string `json:"plan_id"`
		Plan    struct {
			Status string `json:"status"`
		} `json:"plan"`
	} `json:"data"`
}

type feedPage struct {
	Data       []feedItem `json:"data"`
	HasMore    bool       `json:"has_more"`
	NextCursor *string    `json:"next_cursor"`
}

func listFeed(t *testing.T, e *apitest.Env, secret, query string) feedPage {
	t.Helper()
	r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-events" + query, Secret: secret})
	if r.Status != http.StatusOK {
		t.Fatalf("GET /v1/config-events%s: %d %s", query, r.Status, r.Body)
	}
	var p feedPage
	r.Decode(t, &p)
	return p
}

// TestConfigEventsListsTheMessagesOfReadablePlansNewestFirst (§19): GET
// /v1/config-events lists the announced events (not apply_started) of the
// plans the key may read — the read permission of every type of the plan —
// newest first, with §2 paging; each item is the message (id, type,
// timestamp, data).
func TestConfigEventsListsTheMessagesOfReadablePlansNewestFirst(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	apis := e.Key(config.PermConfigRead, "apis:read")
	orders := e.Plan(apiDoc("orders", 60), false)["id"].(string)
	settings := e.Plan(settingsDoc("Shop 2"), false)["id"].(string)
	e.Apply(orders, nil)

	all := listFeed(t, e, e.Secret, "")
	var got []string
	for _, it := range all.Data {
		got = append(got, it.Type+" "+it.Data.PlanID)
		if it.ID != it.Data.EventID || !config.ValidID(config.PrefixEvent, it.ID) {
			t.Errorf("item id %q, data.event_id %q", it.ID, it.Data.EventID)
		}
		if _, err := time.Parse(time.RFC3339Nano, it.Timestamp); err != nil {
			t.Errorf("timestamp %q: %v", it.Timestamp, err)
		}
	}
	want := []string{"plan.applied " + orders, "plan.created " + settings, "plan.created " + orders}
	if !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v (newest first, no apply_started)", got, want)
	}
	if all.Data[0].Data.Plan.Status != "applied" || all.Data[2].Data.Plan.Status != "planned" {
		t.Errorf("statuses %q, %q: the plan as each event left it", all.Data[0].Data.Plan.Status, all.Data[2].Data.Plan.Status)
	}

	// A key that may read APIs only sees the API plan's events, paged.
	first := listFeed(t, e, apis, "?limit=1")
	if len(first.Data) != 1 || !first.HasMore || first.NextCursor == nil || first.Data[0].Type != "plan.applied" {
		t.Fatalf("first page %+v", first)
	}
	second := listFeed(t, e, apis, "?limit=1&cursor="+*first.NextCursor)
	if len(second.Data) != 1 || second.HasMore || second.NextCursor != nil || second.Data[0].Type != "plan.created" || second.Data[0].Data.PlanID != orders {
		t.Fatalf("second page %+v", second)
	}

	if r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-events", Secret: e.Key("apis:read")}); r.Status != http.StatusForbidden {
		t.Errorf("without config:read: %d %s", r.Status, r.Body)
	}
	if r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-events?cursor=nope"}); r.Code() != "malformed_request" {
		t.Errorf("a malformed cursor: %d %s", r.Status, r.Body)
	}
	if r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-events?cursor=" + config.NewID(config.PrefixEvent)}); r.Code() != "malformed_request" {
		t.Errorf("a cursor naming no event: %d %s", r.Status, r.Body)
	}
}

// TestConfigEventStreamDeliversLiveThenReplaysAfterLastEventID (§19): the
// stream answers 200 text/event-stream at once; each event of a readable
// plan comes as id, event (the webhook type) and data (the webhook body's
// data on one line); another key's stream leaves out the plans it may not
// read; a reconnection with Last-Event-ID first replays every later event,
// then goes on live.
func TestConfigEventStreamDeliversLiveThenReplaysAfterLastEventID(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	srv := httptest.NewServer(e.Handler)
	t.Cleanup(srv.Close)
	apis := e.Key(config.PermConfigRead, "apis:read")

	s := apitest.OpenStream(t, srv.URL, e.Secret, "")
	if s.Resp.StatusCode != http.StatusOK || s.Resp.Header.Get("Content-Type") != "text/event-stream" ||
		s.Resp.Header.Get("Cache-Control") != "no-store" || s.Resp.Header.Get("Request-Id") == "" {
		t.Fatalf("stream answered %d %v", s.Resp.StatusCode, s.Resp.Header)
	}
	limited := apitest.OpenStream(t, srv.URL, apis, "")

	settings := e.Plan(settingsDoc("Shop 2"), false)["id"].(string)
	orders := e.Plan(apiDoc("orders", 60), false)["id"].(string)
	first := s.NextEvent(t, 5*time.Second)
	second := s.NextEvent(t, 5*time.Second)
	for i, c := range []struct {
		ev   apitest.SSE
		plan string
	}{{first, settings}, {second, orders}} {
		var data map[string]any
		if err := json.Unmarshal([]byte(c.ev.Data), &data); err != nil {
			t.Fatalf("event %d: data %q: %v", i, c.ev.Data, err)
		}
		if c.ev.Event != "plan.created" || data["plan_id"] != c.plan || data["event_id"] != c.ev.ID || data["environment_id"] != e.EnvID {
			t.Errorf("event %d: %+v, want plan.created of %s", i, c.ev, c.plan)
		}
	}
	// The key that may not read environment settings gets the API plan only.
	if ev := limited.NextEvent(t, 5*time.Second); ev.ID != second.ID {
		t.Fatalf("the API reader's first event is %+v, want %s", ev, second.ID)
	}

	e.Apply(orders, nil)
	applied := s.NextEvent(t, 5*time.Second)
	if applied.Event != "plan.applied" {
		t.Fatalf("after the apply: %+v, want plan.applied (apply_started is not announced)", applied)
	}
	if ev := limited.NextEvent(t, 5*time.Second); ev.ID != applied.ID {
		t.Fatalf("the API reader's next event %+v, want %s", ev, applied.ID)
	}

	// Reconnecting after the first event: the two later ones, in order,
	// then live.
	again := apitest.OpenStream(t, srv.URL, e.Secret, first.ID)
	for _, want := range []string{second.ID, applied.ID} {
		if ev := again.NextEvent(t, 5*time.Second); ev.ID != want {
			t.Fatalf("replay: %+v, want %s", ev, want)
		}
	}
	again.NoEvent(t, 300*time.Millisecond)
	later := e.Plan(apiDoc("users", 60), false)["id"].(string)
	if ev := again.NextEvent(t, 5*time.Second); ev.Event != "plan.created" || !json.Valid([]byte(ev.Data)) {
		t.Fatalf("live after the replay: %+v (plan %s)", ev, later)
	}
	// A Last-Event-ID that names no event of the environment starts live.
	unknown := apitest.OpenStream(t, srv.URL, e.Secret, config.NewID(config.PrefixEvent))
	unknown.NoEvent(t, 300*time.Millisecond)

	if r := apitest.OpenStream(t, srv.URL, e.Key("apis:read"), ""); r.Resp.StatusCode != http.StatusForbidden {
		t.Errorf("a stream without config:read: %d", r.Resp.StatusCode)
	}
	if r := apitest.OpenStream(t, srv.URL, "ksk_nope", ""); r.Resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a stream with an unknown key: %d", r.Resp.StatusCode)
	}
}

// TestConfigEventStreamSendsAHeartbeatComment (§19): a comment line every
// Heartbeat (15 s by default, shortened here).
func TestConfigEventStreamSendsAHeartbeatComment(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{Streams: service.StreamSettings{Heartbeat: 50 * time.Millisecond}})
	srv := httptest.NewServer(e.Handler)
	t.Cleanup(srv.Close)
	s := apitest.OpenStream(t, srv.URL, e.Secret, "")
	comments := 0
	deadline := time.Now().Add(5 * time.Second)
	for comments < 3 {
		it, ok := s.Next(time.Until(deadline))
		if !ok {
			t.Fatalf("%d comment lines within 5 s", comments)
		}
		if it.Comment == "" {
			t.Fatalf("an event %+v on an environment without events", it)
		}
		comments++
	}
}

// TestConfigEventStreamEleventhIs429 (§19): at most 10 streams of an
// environment at once; the 11th is 429 with policy config_events_stream,
// and a closed stream's place is free again.
func TestConfigEventStreamEleventhIs429(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	srv := httptest.NewServer(e.Handler)
	t.Cleanup(srv.Close)
	var open []*apitest.Stream
	for i := range 10 {
		s := apitest.OpenStream(t, srv.URL, e.Secret, "")
		if s.Resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: %d", i+1, s.Resp.StatusCode)
		}
		open = append(open, s)
	}
	eleventh := apitest.OpenStream(t, srv.URL, e.Secret, "")
	if eleventh.Resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the 11th stream: %d", eleventh.Resp.StatusCode)
	}
	var p map[string]any
	if err := json.NewDecoder(eleventh.Resp.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	if p["code"] != "rate_limited" || p["policy"] != "config_events_stream" || eleventh.Resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("the 11th stream's problem: %v %v", eleventh.Resp.Header, p)
	}
	ra, _ := p["retry_after"].(float64)
	if ra < 1 {
		t.Errorf("retry_after %v", p["retry_after"])
	}
	const policy = `"config_events_stream";q=10;qu="concurrent-requests"`
	if got := eleventh.Resp.Header.Get("RateLimit-Policy"); got != policy {
		t.Errorf("the 429's RateLimit-Policy = %q, want %q", got, policy)
	}
	if got, want := eleventh.Resp.Header.Get("RateLimit"), fmt.Sprintf(`"config_events_stream";r=0;t=%d`, int(ra)); got != want || eleventh.Resp.Header.Get("Retry-After") != strconv.Itoa(int(ra)) {
		t.Errorf("the 429's RateLimit = %q and Retry-After %q, want %q and t = Retry-After", got, eleventh.Resp.Header.Get("Retry-After"), want)
	}
	if got := open[0].Resp.Header.Get("RateLimit-Policy"); got != policy {
		t.Errorf("a stream's RateLimit-Policy = %q, want %q", got, policy)
	}
	// Another environment is not limited by this one's streams.
	other := apitest.Setup(t, apitest.Options{Replica: nil, Database: e.DB, Redis: e.Redis, Prefix: e.Prefix})
	otherSrv := httptest.NewServer(other.Handler)
	t.Cleanup(otherSrv.Close)
	if s := apitest.OpenStream(t, otherSrv.URL, other.Secret, ""); s.Resp.StatusCode != http.StatusOK {
		t.Fatalf("another environment's stream: %d", s.Resp.StatusCode)
	}
	open[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := apitest.OpenStream(t, srv.URL, e.Secret, "")
		if s.Resp.StatusCode == http.StatusOK {
			break
		}
		s.Close()
		if time.Now().After(deadline) {
			t.Fatalf("a closed stream's place was not freed: %d", s.Resp.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestConfigEventStreamOfAReplicaHearsTheOtherReplicasEvents (§19): an
// event committed on one replica reaches a stream of another, woken through
// Redis (the 1 s of §19 is benchmark row P13).
func TestConfigEventStreamOfAReplicaHearsTheOtherReplicasEvents(t *testing.T) {
	t.Parallel()
	a := apitest.Setup(t, apitest.Options{})
	// The other replica's streams read the feed only when woken (their
	// poll is an hour): each event arrives by Redis's wake-up or not at
	// all. How soon it arrives is measured by the benchmark (P13), not here.
	b := apitest.Setup(t, apitest.Options{Replica: a, Streams: service.StreamSettings{Poll: time.Hour}})
	srv := httptest.NewServer(b.Handler)
	t.Cleanup(srv.Close)
	s := apitest.OpenStream(t, srv.URL, b.Secret, "")
	for range 3 {
		id := a.Plan(apiDoc("orders", 60), false)["id"].(string)
		ev := s.NextEvent(t, 30*time.Second)
		if ev.Event != "plan.created" || !strings.Contains(ev.Data, id) {
			t.Fatalf("%+v, want the plan.created of %s", ev, id)
		}
	}
}
