package api_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/test/apitest"
)

// planList is a page of GET /v1/config-plans.
type planList struct {
	Data       []plans.Plan `json:"data"`
	HasMore    bool         `json:"has_more"`
	NextCursor *string      `json:"next_cursor"`
}

func getPlanPage(t *testing.T, e *apitest.Env, query string) planList {
	t.Helper()
	r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans" + query})
	if r.Status != http.StatusOK {
		t.Fatalf("GET /v1/config-plans%s: %d %s", query, r.Status, r.Body)
	}
	var l planList
	r.Decode(t, &l)
	if l.Data == nil {
		t.Fatalf("data is not an array: %s", r.Body)
	}
	return l
}

func planIDs(ps []plans.Plan) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

// brandingDoc is a small document; each call with another colour makes an
// update.
func brandingDoc(color string) map[string]any {
	return map[string]any{"branding": map[string]any{"primary_color": color}}
}

// otherEnvironment creates a second environment and an all-permissions key
// of it on the harness's database.
func otherEnvironment(t *testing.T, e *apitest.Env) (envID, secret string) {
	t.Helper()
	ctx := context.Background()
	env, err := e.Domain.Environments.CreateEnvironment(ctx, "Other")
	if err != nil {
		t.Fatal(err)
	}
	k, err := e.Domain.Keys.CreateKey(ctx, env.ID, config.AllPermissions())
	if err != nil {
		t.Fatal(err)
	}
	return env.ID, k.Secret
}

func TestGetPlanAnswersTheStoredPlan(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	created := postPlan(e, "", map[string]any{"config": brandingDoc("#000000"), "prune": true})
	if created.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", created.Status, created.Body)
	}
	id := created.JSON()["id"].(string)
	r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id})
	if r.Status != http.StatusOK {
		t.Fatalf("get: %d %s", r.Status, r.Body)
	}
	if diff := cmp.Diff(created.JSON(), r.JSON()); diff != "" {
		t.Errorf("GET differs from the creation answer (-created +got):\n%s", diff)
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Errorf("Content-Type = %q", r.Header.Get("Content-Type"))
	}
}

func TestGetPlanAnswers404ForAPlanItCannotSee(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	_, otherSecret := otherEnvironment(t, e)
	theirs := postPlan(e, otherSecret, map[string]any{"config": brandingDoc("#000000")})
	if theirs.Status != http.StatusCreated {
		t.Fatalf("create in the other environment: %d %s", theirs.Status, theirs.Body)
	}
	theirID := theirs.JSON()["id"].(string)
	mine := e.Plan(brandingDoc("#111111"), false)["id"].(string)

	for _, id := range []string{
		"cfgp_01m4qpqtywfs7930tb6kqn5rc5", // well formed, unknown
		theirID,                           // another environment's
		"nope",
		"cfgp_",
		"cfgp_01M4QPQTYWFS7930TB6KQN5RC5",
		"cfgr_" + strings.TrimPrefix(mine, "cfgp_"),
		mine + "x",
		"cfgp_81m4qpqtywfs7930tb6kqn5rc5", // beyond the ULID range
	} {
		for _, path := range []string{"/v1/config-plans/" + id, "/v1/config-plans/" + id + "/events"} {
			r := e.Do(apitest.Request{Method: "GET", Path: path})
			expectProblem(t, r, http.StatusNotFound, "not_found")
		}
	}
	// The other environment sees its own plan but not this one.
	if r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + theirID, Secret: otherSecret}); r.Status != http.StatusOK {
		t.Errorf("the owner's GET: %d %s", r.Status, r.Body)
	}
	expectProblem(t, e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + mine, Secret: otherSecret}), http.StatusNotFound, "not_found")
	if diff := cmp.Diff([]string{mine}, planIDs(getPlanPage(t, e, "").Data)); diff != "" {
		t.Errorf("the list shows another environment's plan (-want +got):\n%s", diff)
	}
}

func TestReadingAPlanNeedsTheReadPermissionOfItsTypes(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	connOnly := e.Plan(map[string]any{"connections": map[string]any{}}, false)["id"].(string)
	both := e.Plan(map[string]any{"connections": map[string]any{}, "apis": map[string]any{}}, false)["id"].(string)
	_, reader := keyWithPerms(t, e, "config:read", "connections:read")
	_, noConfigRead := keyWithPerms(t, e, "connections:read", "apis:read")

	if r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + connOnly, Secret: reader}); r.Status != http.StatusOK {
		t.Errorf("GET a plan of readable types: %d %s", r.Status, r.Body)
	}
	for _, path := range []string{"/v1/config-plans/" + both, "/v1/config-plans/" + both + "/events"} {
		p := expectProblem(t, e.Do(apitest.Request{Method: "GET", Path: path, Secret: reader}), http.StatusForbidden, "insufficient_permissions")
		if diff := cmp.Diff([]string{"apis:read", "config:read", "connections:read"}, p.RequiredPermissions); diff != "" {
			t.Errorf("GET %s: required_permissions (-want +got):\n%s", path, diff)
		}
	}
	p := expectProblem(t, e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans", Secret: noConfigRead}), http.StatusForbidden, "insufficient_permissions")
	if diff := cmp.Diff([]string{"config:read"}, p.RequiredPermissions); diff != "" {
		t.Errorf("list: required_permissions (-want +got):\n%s", diff)
	}
	// The list shows only the plans whose types the key may read.
	r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans", Secret: reader})
	var l planList
	r.Decode(t, &l)
	if diff := cmp.Diff([]string{connOnly}, planIDs(l.Data)); diff != "" {
		t.Errorf("listed plans (-want +got):\n%s", diff)
	}
}

func TestListPlansWalksEveryPageNewestFirst(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	var created []string
	for range 25 {
		created = append(created, e.Plan(brandingDoc("#635bff"), false)["id"].(string))
	}
	newestFirst := slices.Clone(created)
	slices.Reverse(newestFirst)

	var walked []string
	var sizes []int
	query := "?limit=10"
	for page := 0; ; page++ {
		if page > 5 {
			t.Fatal("pagination does not end")
		}
		l := getPlanPage(t, e, query)
		walked = append(walked, planIDs(l.Data)...)
		sizes = append(sizes, len(l.Data))
		if !l.HasMore {
			if l.NextCursor != nil {
				t.Errorf("last page has next_cursor %q", *l.NextCursor)
			}
			break
		}
		if l.NextCursor == nil || *l.NextCursor != l.Data[len(l.Data)-1].ID {
			t.Fatalf("has_more with next_cursor %v", l.NextCursor)
		}
		query = "?limit=10&cursor=" + url.QueryEscape(*l.NextCursor)
	}
	if diff := cmp.Diff([]int{10, 10, 5}, sizes); diff != "" {
		t.Errorf("page sizes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(newestFirst, walked); diff != "" {
		t.Errorf("walked plans, newest first (-want +got):\n%s", diff)
	}

	def := getPlanPage(t, e, "")
	if diff := cmp.Diff(newestFirst[:20], planIDs(def.Data)); diff != "" || !def.HasMore || def.NextCursor == nil || *def.NextCursor != newestFirst[19] {
		t.Errorf("default page: has_more %v, next_cursor %v, ids (-want +got):\n%s", def.HasMore, def.NextCursor, diff)
	}
	all := getPlanPage(t, e, "?limit=100")
	if len(all.Data) != 25 || all.HasMore || all.NextCursor != nil {
		t.Errorf("limit=100: %d plans, has_more %v, next_cursor %v", len(all.Data), all.HasMore, all.NextCursor)
	}
	one := getPlanPage(t, e, "?limit=1")
	if diff := cmp.Diff(newestFirst[:1], planIDs(one.Data)); diff != "" || !one.HasMore {
		t.Errorf("limit=1: has_more %v (-want +got):\n%s", one.HasMore, diff)
	}
	// A cursor past the oldest plan gives an empty last page.
	last := getPlanPage(t, e, "?cursor="+created[0])
	if len(last.Data) != 0 || last.HasMore || last.NextCursor != nil {
		t.Errorf("after the oldest: %+v", last)
	}
}

func TestListPlansRefusesInvalidParameters(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	for _, q := range []string{"?limit=0", "?limit=101", "?limit=-1", "?limit=abc", "?limit=", "?limit=1.5",
		"?cursor=abc", "?cursor=", "?cursor=evt_01m4qpqtywfs7930tb6kqn5rc5", "?cursor=cfgp_01M4QPQTYWFS7930TB6KQN5RC5",
		"?status=done", "?status=PLANNED"} {
		t.Run(q, func(t *testing.T) {
			r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans" + q})
			expectProblem(t, r, http.StatusBadRequest, "malformed_request")
		})
	}
	for _, q := range []string{"?limit=1", "?limit=100", "?limit=20&cursor=cfgp_01m4qpqtywfs7930tb6kqn5rc5", "?status="} {
		if r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans" + q}); r.Status != http.StatusOK {
			t.Errorf("GET /v1/config-plans%s: %d %s", q, r.Status, r.Body)
		}
	}
}

func TestListPlansFiltersByStatus(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	applied := e.Plan(brandingDoc("#000000"), false)["id"].(string)
	e.Apply(applied, nil)
	expired := e.Plan(brandingDoc("#111111"), false)["id"].(string)
	e.Clock.Advance(25 * time.Hour)
	planned := e.Plan(brandingDoc("#222222"), false)["id"].(string)

	for status, want := range map[string][]string{
		"planned":    {planned},
		"applied":    {applied},
		"expired":    {expired},
		"conflicted": {},
		"applying":   {},
		"":           {planned, expired, applied},
	} {
		l := getPlanPage(t, e, "?status="+status)
		if diff := cmp.Diff(want, planIDs(l.Data)); diff != "" {
			t.Errorf("status=%s (-want +got):\n%s", status, diff)
		}
		for _, p := range l.Data {
			if status != "" && string(p.Status) != status {
				t.Errorf("status=%s lists plan %s with status %s", status, p.ID, p.Status)
			}
		}
	}
	r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + expired})
	if got := r.JSON()["status"]; got != "expired" {
		t.Errorf("GET of the expired plan: status %v", got)
	}
	// A filtered list pages like any other.
	for range 3 {
		e.Plan(brandingDoc("#333333"), false)
	}
	p1 := getPlanPage(t, e, "?status=planned&limit=2")
	if len(p1.Data) != 2 || !p1.HasMore || p1.NextCursor == nil {
		t.Fatalf("first filtered page: %+v", p1)
	}
	p2 := getPlanPage(t, e, "?status=planned&limit=2&cursor="+*p1.NextCursor)
	if len(p2.Data) != 2 || p2.HasMore || p2.Data[1].ID != planned {
		t.Errorf("second filtered page: %v has_more %v, want it to end with %s", planIDs(p2.Data), p2.HasMore, planned)
	}
}

// eventList is a page of GET /v1/config-plans/{id}/events.
type eventList struct {
	Data       []plans.Event `json:"data"`
	HasMore    bool          `json:"has_more"`
	NextCursor *string       `json:"next_cursor"`
}

func TestPlanEventsTellItsHistoryOldestFirst(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	keyID, secret := keyWithPerms(t, e, config.AllPermissions()...)
	created := postPlan(e, secret, map[string]any{"config": brandingDoc("#000000")})
	if created.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", created.Status, created.Body)
	}
	id := created.JSON()["id"].(string)

	events := func(query string) eventList {
		t.Helper()
		r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id + "/events" + query})
		if r.Status != http.StatusOK {
			t.Fatalf("events: %d %s", r.Status, r.Body)
		}
		var l eventList
		r.Decode(t, &l)
		return l
	}
	l := events("")
	if len(l.Data) != 1 || l.HasMore || l.NextCursor != nil {
		t.Fatalf("events of a new plan: %+v", l)
	}
	ev := l.Data[0]
	if ev.Type != "plan_created" || ev.Actor.APIKeyID != keyID || ev.RequestID != created.Header.Get("Request-Id") ||
		!config.ValidID(config.PrefixEvent, ev.ID) {
		t.Errorf("plan_created = %+v, want actor %s and request_id %s", ev, keyID, created.Header.Get("Request-Id"))
	}
	if time.Time(ev.CreatedAt).IsZero() {
		t.Errorf("created_at is zero")
	}

	applyResp := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + id + ":apply", Body: "{}"})
	if applyResp.Status != http.StatusOK {
		t.Fatalf("apply: %d %s", applyResp.Status, applyResp.Body)
	}
	l = events("")
	var types []string
	for _, ev := range l.Data {
		types = append(types, ev.Type)
		if ev.Type != "plan_created" && (ev.RequestID != applyResp.Header.Get("Request-Id") || ev.Actor.APIKeyID == "") {
			t.Errorf("%s: request_id %q, actor %q; the apply's Request-Id is %q", ev.Type, ev.RequestID, ev.Actor.APIKeyID,
				applyResp.Header.Get("Request-Id"))
		}
	}
	if diff := cmp.Diff([]string{"plan_created", "apply_started", "apply_succeeded"}, types); diff != "" {
		t.Errorf("event types, oldest first (-want +got):\n%s", diff)
	}

	// Pages of one event walk the same history.
	var walked []string
	query := "?limit=1"
	for range 5 {
		p := events(query)
		for _, ev := range p.Data {
			walked = append(walked, ev.Type)
		}
		if !p.HasMore {
			break
		}
		query = "?limit=1&cursor=" + *p.NextCursor
	}
	if diff := cmp.Diff(types, walked); diff != "" {
		t.Errorf("paged events (-want +got):\n%s", diff)
	}
	for _, q := range []string{"?limit=0", "?cursor=cfgp_01m4qpqtywfs7930tb6kqn5rc5", "?cursor=x"} {
		expectProblem(t, e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + id + "/events" + q}),
			http.StatusBadRequest, "malformed_request")
	}
}

func TestAuthenticationFailuresAnswer401(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	revokedID, revoked := keyWithPerms(t, e, config.AllPermissions()...)
	if err := e.Domain.Keys.RevokeKey(context.Background(), revokedID); err != nil {
		t.Fatal(err)
	}
	planID := e.Plan(brandingDoc("#000000"), false)["id"].(string)
	_, valid := keyWithPerms(t, e, config.AllPermissions()...)
	// The secret is ksk_ + environment ULID + key ULID + 32 random characters.
	tampered := valid[:len(valid)-1] + map[bool]string{true: "a", false: "b"}[!strings.HasSuffix(valid, "a")]
	unknownKey := "ksk_" + strings.TrimPrefix(e.EnvID, "env_") + "01m4qpqtywfs7930tb6kqn5rc5" + strings.Repeat("a", 32)
	otherEnv := "ksk_01m4qpqtywfs7930tb6kqn5rc5" + valid[4+26:]

	headers := map[string]string{
		"missing":              "",
		"not Bearer":           "Basic " + valid,
		"Bearer without a key": "Bearer",
		"Bearer and a space":   "Bearer ",
		"a bare key":           valid,
		"unknown key":          "Bearer " + unknownKey,
		"key of another env":   "Bearer " + otherEnv,
		"wrong secret":         "Bearer " + tampered,
		"malformed key":        "Bearer ksk_abc",
		"not a key":            "Bearer " + strings.TrimPrefix(valid, "ksk_"),
		"key and more":         "Bearer " + valid + "x",
		"revoked key":          "Bearer " + revoked,
		"the internal token":   "Bearer " + apitest.InternalToken,
	}
	requests := []apitest.Request{
		{Method: "GET", Path: "/v1/config"},
		{Method: "GET", Path: "/v1/config-plans"},
		{Method: "GET", Path: "/v1/config-plans/" + planID},
		{Method: "GET", Path: "/v1/config-plans/" + planID + "/events"},
		{Method: "POST", Path: "/v1/config-plans", Body: map[string]any{"config": brandingDoc("#111111")}},
		{Method: "POST", Path: "/v1/config-plans/" + planID + ":apply", Body: "{}"},
	}
	for name, h := range headers {
		for _, req := range requests {
			req.Secret = "-"
			if h != "" {
				req.Header = map[string]string{"Authorization": h}
			}
			r := e.Do(req)
			if r.Status != http.StatusUnauthorized || r.Code() != "unauthenticated" {
				t.Errorf("%s: %s %s = %d %s", name, req.Method, req.Path, r.Status, r.Body)
				continue
			}
			expectProblem(t, r, http.StatusUnauthorized, "unauthenticated")
		}
	}
	// Nothing ran: one plan, still planned.
	if n, _ := storedPlanRows(t, e); n != 1 {
		t.Errorf("%d plans stored, want 1", n)
	}
	if got := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans/" + planID}).JSON()["status"]; got != "planned" {
		t.Errorf("plan status = %v", got)
	}
	// An API key does not open the internal endpoints.
	r := e.Do(apitest.Request{Method: "PUT", Path: "/internal/v1/environments/" + e.EnvID + "/policies", Body: "{}"})
	expectProblem(t, r, http.StatusUnauthorized, "unauthenticated")
}

func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	for _, scheme := range []string{"Bearer", "bearer", "BEARER"} {
		r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-plans", Secret: "-",
			Header: map[string]string{"Authorization": scheme + " " + e.Secret}})
		if r.Status != http.StatusOK {
			t.Errorf("%s: %d %s", scheme, r.Status, r.Body)
		}
		r = e.Do(apitest.Request{Method: "PUT", Path: "/internal/v1/environments/" + e.EnvID + "/policies", Body: "{}", Secret: "-",
			Header: map[string]string{"Authorization": scheme + " " + apitest.InternalToken}})
		if r.Status != http.StatusOK {
			t.Errorf("internal, %s: %d %s", scheme, r.Status, r.Body)
		}
	}
}

func TestExportAnswersTheConfigurationAsAPlanInput(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	doc := apitest.ExampleDocument()
	delete(doc["connections"].(map[string]any), "legacy")
	doc["connections"].(map[string]any)["db"] = map[string]any{"type": "database", "display_name": "Main", "active": true,
		"database": map[string]any{"requires_username": true, "min_password_length": 12}}
	doc["roles"] = map[string]any{"reader": map[string]any{"display_name": "Reader",
		"permissions": []any{map[string]any{"api": "orders", "scope": "read:orders"}}}}
	doc["application_branding"] = map[string]any{"portal": map[string]any{"primary_color": "#ABCDEF", "logo_url": "https://cdn.shop.example/logo.png"}}
	doc["branding"] = map[string]any{"primary_color": "#FF0000", "page_background_color": "#FFFFFF"}
	p := e.Plan(doc, false)
	e.Apply(p["id"].(string), map[string]any{
		"resolved_secrets": map[string]any{"KEENAUTH_CONNECTION_ACME_SSO_CLIENT_SECRET": "s3cret"},
		"sp_host":          "login.shop.example",
	})

	cfg, versions := e.Export()
	var keys []string
	for k := range cfg {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if diff := cmp.Diff([]string{"apis", "application_branding", "applications", "attack_protection", "branding", "connections",
		"environment_settings", "identity_settings", "roles"}, keys); diff != "" {
		t.Errorf("exported document keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"primary_color": "#ff0000", "page_background_color": "#ffffff"}, cfg["branding"]); diff != "" {
		t.Errorf("branding is exported normalised (-want +got):\n%s", diff)
	}
	wantVersions := map[string]any{
		"api/orders": 1.0, "connection/acme-sso": 1.0, "connection/github": 1.0, "connection/db": 1.0, "role/reader": 1.0,
		"application/portal": 1.0, "application_branding/portal": 1.0, "environment_settings/default": 2.0,
		"identity_settings/default": 1.0, "attack_protection/default": 1.0, "branding/default": 2.0,
	}
	if diff := cmp.Diff(wantVersions, versions); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}

	// Fed back, with or without prune, the export changes nothing.
	for _, prune := range []bool{false, true} {
		again := e.Plan(cfg, prune)
		sum := again["summary"].(map[string]any)
		if diff := cmp.Diff(map[string]any{"create": 0.0, "update": 0.0, "delete": 0.0, "no_op": float64(len(wantVersions))}, sum); diff != "" {
			t.Errorf("prune=%v: summary of the export planned again (-want +got):\n%s\n%v", prune, diff, changeLines(again))
		}
		if len(again["warnings"].([]any)) != 0 || len(again["required_secrets"].([]any)) != 0 || again["requires_sp_host"] != false {
			t.Errorf("prune=%v: warnings %v, secrets %v, host %v", prune, again["warnings"], again["required_secrets"], again["requires_sp_host"])
		}
	}

	// Some types only.
	r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config?types=connection,api"})
	if r.Status != http.StatusOK {
		t.Fatalf("export of two types: %d %s", r.Status, r.Body)
	}
	var some struct {
		Config   map[string]any `json:"config"`
		Versions map[string]any `json:"versions"`
	}
	r.Decode(t, &some)
	if diff := cmp.Diff(map[string]any{"connections": cfg["connections"], "apis": cfg["apis"]}, some.Config); diff != "" {
		t.Errorf("config of types=connection,api (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"api/orders": 1.0, "connection/acme-sso": 1.0, "connection/github": 1.0, "connection/db": 1.0}, some.Versions); diff != "" {
		t.Errorf("versions of types=connection,api (-want +got):\n%s", diff)
	}
	again := e.Plan(some.Config, true)
	if diff := cmp.Diff([]string{"api/orders no_op", "connection/acme-sso no_op", "connection/db no_op", "connection/github no_op"}, changeLines(again)); diff != "" {
		t.Errorf("types=connection,api planned again (-want +got):\n%s", diff)
	}
}

func TestExportOfAnEmptyTypeIsAnEmptyObject(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config?types=role,branding"})
	if r.Status != http.StatusOK {
		t.Fatalf("export: %d %s", r.Status, r.Body)
	}
	want := docOf(t, `{"config": {"roles": {}, "branding": {"primary_color": "#635bff"}}, "versions": {"branding/default": 1}}`)
	if diff := cmp.Diff(want, r.JSON()); diff != "" {
		t.Errorf("export (-want +got):\n%s", diff)
	}
}

func TestExportRefusesUnknownTypesAndMissingPermissions(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	for _, q := range []string{"?types=widget", "?types=connection,widget", "?types=connections", "?types=", "?types=connection,"} {
		expectProblem(t, e.Do(apitest.Request{Method: "GET", Path: "/v1/config" + q}), http.StatusBadRequest, "malformed_request")
	}
	_, twoTypes := keyWithPerms(t, e, "config:read", "connections:read", "apis:read")
	if r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config?types=api,connection", Secret: twoTypes}); r.Status != http.StatusOK {
		t.Errorf("export of readable types: %d %s", r.Status, r.Body)
	}
	tests := []struct {
		secret, query string
		required      []string
	}{
		{twoTypes, "", []string{"apis:read", "applications:read", "attack-protection:read", "branding:read", "config:read",
			"connections:read", "environment-settings:read", "identity-settings:read", "roles:read"}},
		{twoTypes, "?types=connection,role", []string{"config:read", "connections:read", "roles:read"}},
		{twoTypes, "?types=application_branding", []string{"branding:read", "config:read"}},
	}
	_, noConfigRead := keyWithPerms(t, e, "connections:read", "apis:read")
	tests = append(tests, struct {
		secret, query string
		required      []string
	}{noConfigRead, "?types=connection", []string{"config:read", "connections:read"}})
	for _, tt := range tests {
		p := expectProblem(t, e.Do(apitest.Request{Method: "GET", Path: "/v1/config" + tt.query, Secret: tt.secret}),
			http.StatusForbidden, "insufficient_permissions")
		if diff := cmp.Diff(tt.required, p.RequiredPermissions); diff != "" {
			t.Errorf("GET /v1/config%s: required_permissions (-want +got):\n%s", tt.query, diff)
		}
	}
}
