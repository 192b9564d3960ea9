package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/config/displayname"
	"github.com/keenauth/configplans/test/apitest"
)

// joinedNames are real names holding U+200C or U+200D where it joins
// (§24): each one plans and applies as a display name of every kind.
var joinedNames = []string{
	"می\u200cخواهم",                 // Persian: I want
	"کتاب\u200cها",                  // Persian: the books
	"ذمہ\u200cداری",                 // Urdu: responsibility
	"क्\u200dष",                     // Hindi: kṣa with a half ka
	"क्\u200cष",                     // Hindi: kṣa with a visible virama
	"എന്\u200dറെ",                   // Malayalam: my (an old-style chillu)
	"ශ්\u200dරී ලංකා",               // Sinhala: Sri Lanka
	"Team 👩\u200d💻",                 // a technologist
	"👨\u200d👩\u200d👧\u200d👦 Family", // a family
	"🧑\u200d🧑\u200d🧒",               // a family of adults and a child
	"👩🏽\u200d💻 Ops",                 // a skin tone before the joiner
	"🏳\ufe0f\u200d🌈 Pride",          // U+FE0F before the joiner
	"👩\u200d❤\ufe0f\u200d👨",         // a couple with a heart
}

// misjoinedNames hold a joiner where it does not join, and the position
// the detail names.
var misjoinedNames = []struct{ what, name, at string }{
	{"a ZWNJ at the start", "\u200cمی", "U+200C at character 1 (at the start)"},
	{"a ZWJ at the end", "क्\u200d", "U+200D at character 3 (at the end)"},
	{"a ZWNJ doubled", "می\u200c\u200cخواهم", "U+200C at character 3 (doubled)"},
	{"a ZWNJ beside a space", "کتاب\u200c ها", "U+200C at character 5 (beside a space)"},
	{"a ZWJ beside a digit", "Team\u200d1", "U+200D at character 5 (beside a digit)"},
	{"a ZWJ between an emoji and a letter", "👩\u200dTeam", "U+200D at character 2 (where it does not join)"},
	{"a ZWNJ between two emoji", "👩\u200c💻", "U+200C at character 2 (where it does not join)"},
}

func TestDisplayNamesWithJoinersThatJoinPlanAndApply(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	// Every name as a connection, an api, a role and an application, in one
	// document; environment_settings, a singleton, takes two of them below.
	conns, apis, roles, apps := []string{}, []string{}, []string{}, []string{}
	for i, name := range joinedNames {
		n := jsonString(t, name)
		conns = append(conns, fmt.Sprintf(`"c%d": {"type": "database", "display_name": %s, "active": true, "database": {"requires_username": false}}`, i, n))
		apis = append(apis, fmt.Sprintf(`"a%d": {"identifier": "https://api.shop.example/%d", "display_name": %s, "token_lifetime_seconds": 60}`, i, i, n))
		roles = append(roles, fmt.Sprintf(`"r%d": {"display_name": %s}`, i, n))
		apps = append(apps, fmt.Sprintf(`"p%d": {"display_name": %s, "type": "spa"}`, i, n))
	}
	doc := `{"connections": {` + strings.Join(conns, ",") + `}, "apis": {` + strings.Join(apis, ",") +
		`}, "roles": {` + strings.Join(roles, ",") + `}, "applications": {` + strings.Join(apps, ",") + `}}`
	p := e.Plan(docOf(t, doc), false)
	if w := uniqueWarnings(p); len(w) != 0 {
		t.Errorf("unique_value_in_use warnings = %v, want none", w)
	}
	e.Apply(p["id"].(string), nil)

	cfg, _ := e.Export()
	for i, name := range joinedNames {
		for _, r := range []struct{ member, key string }{
			{"connections", fmt.Sprint("c", i)}, {"apis", fmt.Sprint("a", i)}, {"roles", fmt.Sprint("r", i)}, {"applications", fmt.Sprint("p", i)},
		} {
			spec, _ := cfg[r.member].(map[string]any)[r.key].(map[string]any)
			if got := spec["display_name"]; got != name {
				t.Errorf("%s/%s display_name = %q, want %q as planned", r.member, r.key, got, name)
			}
		}
		// The stored key keeps the joiners.
		for _, kind := range []string{"connection", "role"} {
			key := map[string]string{"connection": "c", "role": "r"}[kind] + fmt.Sprint(i)
			if diff := cmp.Diff(new(displayname.Key(name)), storedDisplayNameKey(t, e, kind, key)); diff != "" {
				t.Errorf("%s/%s display_name_key (-want +got):\n%s", kind, key, diff)
			}
		}
	}

	for _, name := range []string{"می\u200cخواهم", "Team 👩\u200d💻"} {
		e.Apply(e.Plan(docOf(t, fmt.Sprintf(displayNameDocs[0].doc, jsonString(t, name))), false)["id"].(string), nil)
		cfg, _ := e.Export()
		if got := cfg["environment_settings"].(map[string]any)["display_name"]; got != name {
			t.Errorf("environment_settings display_name = %q, want %q", got, name)
		}
	}
}

func TestDisplayNameWithAJoinerThatDoesNotJoinIs422(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	for _, d := range displayNameDocs {
		for _, tt := range misjoinedNames {
			t.Run(d.kind+" with "+tt.what, func(t *testing.T) {
				r := postPlan(e, "", map[string]any{"config": docOf(t, fmt.Sprintf(d.doc, jsonString(t, tt.name)))})
				p := expectProblem(t, r, http.StatusUnprocessableEntity, "validation_failed")
				expectErrors(t, p, d.pointer+" invalid")
				if len(p.Errors) == 1 && !strings.Contains(p.Errors[0].Detail, " "+tt.at+": ") {
					t.Errorf("detail %q does not name %s", p.Errors[0].Detail, tt.at)
				}
			})
		}
		// Every other format character is still refused, with its position.
		for what, name := range map[string]string{
			"a word joiner":           "Ma\u2060in",
			"a left-to-right isolate": "Ma\u2066in",
			"a zero-width space between letters that a joiner would join": "می\u200bخواهم",
		} {
			t.Run(d.kind+" with "+what, func(t *testing.T) {
				r := postPlan(e, "", map[string]any{"config": docOf(t, fmt.Sprintf(d.doc, jsonString(t, name)))})
				p := expectProblem(t, r, http.StatusUnprocessableEntity, "validation_failed")
				expectErrors(t, p, d.pointer+" invalid")
				if len(p.Errors) == 1 && !strings.Contains(p.Errors[0].Detail, " at character 3") {
					t.Errorf("detail %q does not name character 3", p.Errors[0].Detail)
				}
			})
		}
	}
	if plans, _ := storedPlanRows(t, e); plans != 0 {
		t.Errorf("%d plans stored, want none", plans)
	}
}

// A name with a joiner and the same name without it are two names (§24);
// case folding still makes one name of two cases around a joiner.
func TestDisplayNamesWithAndWithoutAJoinerAreTwoNames(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	conn := func(key, name string) string {
		return `"` + key + `": {"type": "database", "display_name": ` + jsonString(t, name) +
			`, "active": true, "database": {"requires_username": false}}`
	}
	const joined, plain = "می\u200cخواهم", "میخواهم"

	t.Run("in one document", func(t *testing.T) {
		r := postPlan(e, "", map[string]any{"config": docOf(t, `{"connections": {`+conn("a", "Team 👩\u200d💻")+`, `+
			conn("b", "TEAM 👩\u200d💻")+`, `+conn("c", "Team 👩💻")+`}, "roles": {"x": {"display_name": "`+joined+
			`"}, "y": {"display_name": "`+plain+`"}}}`)})
		expectErrors(t, expectProblem(t, r, http.StatusUnprocessableEntity, "validation_failed"),
			"/config/connections/b/display_name duplicate")
	})

	e.Apply(e.Plan(docOf(t, `{"roles": {"x": {"display_name": "`+joined+`"}}, "connections": {`+conn("tech", "Team 👩\u200d💻")+`}}`), false)["id"].(string), nil)
	if diff := cmp.Diff(new(displayname.Key(joined)), storedDisplayNameKey(t, e, "role", "x")); diff != "" {
		t.Errorf("role key (-want +got):\n%s", diff)
	}

	t.Run("the same name with a joiner is in use", func(t *testing.T) {
		for _, tt := range []struct{ doc, target string }{
			{`{"roles": {"x2": {"display_name": "` + joined + `"}}}`, "role/x2"},
			{`{"connections": {` + conn("tech2", "TEAM 👩\u200d💻") + `}}`, "connection/tech2"},
		} {
			p := e.Plan(docOf(t, tt.doc), false)
			if diff := cmp.Diff([]string{tt.target + " /changes/0/spec/display_name"}, uniqueWarnings(p)); diff != "" {
				t.Errorf("%s: unique_value_in_use warnings (-want +got):\n%s", tt.target, diff)
			}
			r := e.Do(apitest.Request{Method: "POST", Path: "/v1/config-plans/" + p["id"].(string) + ":apply"})
			assertProblem(t, r, http.StatusConflict, "conflict", []fieldProblem{{"/changes/0/spec/display_name", "duplicate"}})
		}
	})
	t.Run("the name without the joiner is another name", func(t *testing.T) {
		p := e.Plan(docOf(t, `{"roles": {"y": {"display_name": "`+plain+`"}}, "connections": {`+conn("tech2", "Team 👩💻")+`}}`), false)
		if w := uniqueWarnings(p); len(w) != 0 {
			t.Errorf("unique_value_in_use warnings = %v, want none", w)
		}
		e.Apply(p["id"].(string), nil)
		if k := storedDisplayNameKey(t, e, "role", "y"); k == nil || *k == displayname.Key(joined) {
			t.Errorf("role y key = %v, want the key without the joiner", k)
		}
	})
}
