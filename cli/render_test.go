package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDiffLinesAreReadable(t *testing.T) {
	t.Parallel()
	ops := []diffOp{
		{Op: "add", Path: "", Value: json.RawMessage(`{"type":"social","social":{"provider":"github","use_own_credentials":false},"empty":{},"list":[1,{"b":2,"a":1}]}`)},
		{Op: "remove", Path: "/idle_session_lifetime_hours", Old: json.RawMessage(`24`)},
		{Op: "replace", Path: "/session_lifetime_hours", Old: json.RawMessage(`168`), Value: json.RawMessage(`72`)},
		{Op: "replace", Path: "/mfa", Old: json.RawMessage(`"optional"`), Value: json.RawMessage(`"required"`)},
		{Op: "replace", Path: "/oidc", Old: json.RawMessage(`null`), Value: json.RawMessage(`{"scopes":["openid"],"issuer":"https://i.example"}`)},
		{Op: "remove", Path: "/connections/1", Old: json.RawMessage(`"legacy"`)},
		{Op: "add", Path: "/connections/2", Value: json.RawMessage(`"github"`)},
		{Op: "remove", Path: "/scopes/0", Old: json.RawMessage(`{"value":"a","description":"A"}`)},
		{Op: "replace", Path: "/scopes/1/description", Old: json.RawMessage(`"B"`), Value: json.RawMessage(`"Bee"`)},
		{Op: "add", Path: "/scopes/2", Value: json.RawMessage(`{"value":"c"}`)},
		{Op: "replace", Path: "/callback_urls", Old: json.RawMessage(`["https://a.example/cb","https://b.example/cb"]`),
			Value: json.RawMessage(`["https://b.example/cb","https://a.example/cb"]`)},
		{Op: "add", Path: "/oidc", Value: json.RawMessage(`{"issuer":"https://idp.example","scopes":["openid"]}`)},
		{Op: "remove", Path: "/social", Old: json.RawMessage(`{"provider":"github","use_own_credentials":false}`)},
		{Op: "add", Path: "/a~1b/c~0d", Value: json.RawMessage(`null`)},
		{Op: "replace", Path: "/html", Old: json.RawMessage(`"&"`), Value: json.RawMessage(`"<b>&"`)},
		// A plan stored before the API wrote old.
		{Op: "remove", Path: "/description"},
		{Op: "replace", Path: "/display_name", Value: json.RawMessage(`"Shop"`)},
	}
	want := []string{
		"+ empty: {}",
		`+ list: [1,{"a":1,"b":2}]`,
		`+ social.provider: "github"`,
		"+ social.use_own_credentials: false",
		`+ type: "social"`,
		"- idle_session_lifetime_hours: 24",
		"~ session_lifetime_hours: 168 → 72",
		`~ mfa: "optional" → "required"`,
		`~ oidc: null → {"issuer":"https://i.example","scopes":["openid"]}`,
		`- connections[1]: "legacy"`,
		`+ connections[2]: "github"`,
		`- scopes[0]: {"description":"A","value":"a"}`,
		`~ scopes[1].description: "B" → "Bee"`,
		`+ scopes[2]: {"value":"c"}`,
		`~ callback_urls: ["https://a.example/cb","https://b.example/cb"] → ["https://b.example/cb","https://a.example/cb"]`,
		`+ oidc.issuer: "https://idp.example"`,
		`+ oidc.scopes: ["openid"]`,
		`- social.provider: "github"`,
		"- social.use_own_credentials: false",
		"+ a/b.c~d: null",
		`~ html: "&" → "<b>&"`,
		"- description",
		`~ display_name: "Shop"`,
	}
	if diff := cmp.Diff(want, diffLines(ops)); diff != "" {
		t.Errorf("diffLines (-want +got):\n%s", diff)
	}
}

// TestADeletedResourceShowsItsOldSpec reads a delete as the API writes it
// (old is the whole spec) and a null old as null, not as a missing one.
func TestADeletedResourceShowsItsOldSpec(t *testing.T) {
	t.Parallel()
	var changes []change
	if err := json.Unmarshal([]byte(`[
	  {"kind":"connection","key":"legacy","action":"delete","base_version":4,"spec":null,"resource_id":"con_1",
	   "diff":[{"op":"remove","path":"","old":{"type":"database","active":true,"database":{"requires_username":false}}}]},
	  {"kind":"connection","key":"acme","action":"update","base_version":2,
	   "diff":[{"op":"replace","path":"/oidc","old":null,"value":{"client_id":"c"}}]}]`), &changes); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	renderChanges(&b, palette{}, changes, false)
	want := `  - delete  connection/legacy  (con_1, version 4)
      - active: true
      - database.requires_username: false
      - type: "database"
  ~ update  connection/acme  (version 2)
      ~ oidc: null → {"client_id":"c"}
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("renderChanges (-want +got):\n%s", diff)
	}
}

func TestNextCommandHoldsWhatTheApplyNeeds(t *testing.T) {
	t.Parallel()
	pl := &plan{ID: "cfgp_x", RequiredSecrets: []string{"KEENAUTH_A"}, RequiresSPHost: true, Warnings: []warning{
		{Code: "unique_value_in_use", Target: "role/admin"},
		{Code: "deletion_requires_confirmation", Target: "connection/legacy"},
		{Code: "deletion_requires_confirmation", Target: "application/old"},
	}}
	want := "keenauth config apply cfgp_x --confirm-deletion connection/legacy --confirm-deletion application/old --secrets-from-env --sp-host <host>"
	if got := pl.applyCommand(); got != want {
		t.Errorf("applyCommand() = %q, want %q", got, want)
	}
	if got := (&plan{ID: "cfgp_y"}).applyCommand(); got != "keenauth config apply cfgp_y" {
		t.Errorf("applyCommand() of a plain plan = %q", got)
	}
}

func TestProblemSentenceAndDetails(t *testing.T) {
	t.Parallel()
	e := &apiError{status: 409, problem: problem{Title: "Deletion not confirmed", Code: "deletion_not_confirmed",
		Detail: "2 protected deletion(s) must be confirmed in confirm_deletions", RequestID: "req_1",
		UnconfirmedDeletions: []string{"connection/a", "application/b"},
		Errors:               []fieldError{{Pointer: "", Code: "invalid", Detail: "whole"}}}}
	if got, want := e.Error(), "Deletion not confirmed: 2 protected deletion(s) must be confirmed in confirm_deletions"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	var b strings.Builder
	renderProblemDetails(&b, e)
	want := `  (request): invalid (whole)
  unconfirmed deletions: connection/a, application/b
  (HTTP 409 deletion_not_confirmed, request req_1)
Confirm the deletions to apply: --confirm-deletion connection/a --confirm-deletion application/b
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("details (-want +got):\n%s", diff)
	}
	// A title that repeats the detail is said once.
	if got := sentence(problem{Title: "Not found", Detail: "not found"}); got != "Not found" {
		t.Errorf("sentence = %q", got)
	}
}

func TestAnAnswerThatIsNotAProblemStillReadsWell(t *testing.T) {
	t.Parallel()
	e := newAPIError(&response{status: 502, header: map[string][]string{"Request-Id": {"req_2"}}, body: []byte("<html>bad gateway</html>")})
	if got, want := e.Error(), "the API answered HTTP 502"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if e.problem.RequestID != "req_2" || apiExitCode(e) != ExitUnavailable {
		t.Errorf("problem %+v, exit %d", e.problem, apiExitCode(e))
	}
}

// TestCompactWritesAScalarAsTheEncoderWould: compact's short cut for plain
// scalars writes what decoding and encoding them again writes.
func TestCompactWritesAScalarAsTheEncoderWould(t *testing.T) {
	t.Parallel()
	for _, v := range []string{
		`"plain"`, `""`, `"<b>&amp;</b>"`, `"é ü 漢字"`, `"a\"b"`, `"a\\b"`, `"\u00e9"`, `"\/"`, `"line\nbreak"`,
		"\"sep\u2028arator\"", "\"para\u2029graph\"", "\"bad \xff utf-8\"", `0`, `-0`, `1.50`, `1e5`, `-12.5E-3`,
		`true`, `false`, `null`, ` "padded" `, `{"b":1,"a":"x"}`, `[3,"y",{"d":null,"c":true}]`, `01`, `"unterminated`, `tru`,
	} {
		if got, want := compact(json.RawMessage(v)), reencode(json.RawMessage(strings.TrimSpace(v))); got != want {
			t.Errorf("compact(%q) = %q, want %q", v, got, want)
		}
	}
}
