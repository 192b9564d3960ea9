package cli

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func testVars(t *testing.T, m map[string]string) variables {
	t.Helper()
	vars := variables{}
	for k, v := range m {
		vars[k] = variable{value: json.RawMessage(v), source: "test.json"}
	}
	return vars
}

func TestSubstituteReplacesEveryPlaceholder(t *testing.T) {
	t.Parallel()
	vars := testVars(t, map[string]string{
		"HOST":     `"api.example"`,
		"LIFETIME": `3600`,
		"SCOPES":   `["openid","email"]`,
		"OIDC":     `{"issuer":"https://i.example"}`,
		"ON":       `true`,
		"NOTHING":  `null`,
	})
	doc := json.RawMessage(`{"b":{"identifier":"https://${HOST}/orders","t":"${LIFETIME}","n":7.50},` +
		`"a":["${SCOPES}","${OIDC}","${ON}","${NOTHING}","port ${LIFETIME} ${ON}"],` +
		`"${HOST}":"$${HOST} costs $$5 and $${","u":"\u00e9<&>"}`)
	s, err := substitute("doc.json", doc, vars)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"b":{"identifier":"https://api.example/orders","t":3600,"n":7.50},` +
		`"a":[["openid","email"],{"issuer":"https://i.example"},true,null,"port 3600 true"],` +
		`"${HOST}":"${HOST} costs $$5 and ${","u":"é<&>"}`
	if string(s.doc) != want {
		t.Errorf("substitute:\n got %s\nwant %s", s.doc, want)
	}
	if got := s.unused(vars); len(got) != 0 {
		t.Errorf("unused = %v", got)
	}
}

func TestSubstituteKeepsADocumentWithoutPlaceholdersAsItIs(t *testing.T) {
	t.Parallel()
	doc := json.RawMessage("{\n  \"a\": [1.0, 2e3, \"$5 {x}\"]\n}")
	s, err := substitute("doc.json", doc, testVars(t, map[string]string{"A": `"x"`}))
	if err != nil {
		t.Fatal(err)
	}
	if string(s.doc) != string(doc) {
		t.Errorf("the document changed: %s", s.doc)
	}
	if diff := cmp.Diff([]string{"A"}, s.unused(testVars(t, map[string]string{"A": `"x"`}))); diff != "" {
		t.Errorf("unused (-want +got):\n%s", diff)
	}
}

func TestSubstituteNamesEveryUnresolvedPlaceholderWithItsPointer(t *testing.T) {
	t.Parallel()
	vars := testVars(t, map[string]string{"LIST": `[1]`})
	doc := json.RawMessage(`{"apis":{"orders":{"identifier":"${ORDERS_URL}","scopes":[{"value":"x ${SCOPE}"}]}},` +
		`"a/b":{"c~d":"${lower} and ${UNCLOSED"},"e":"in ${LIST} text","f":"${MISSING}","g":"${` + strings.Repeat("A", 100) + `"}`)
	_, err := substitute("doc.json", doc, vars)
	var pe *placeholderError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a placeholder error", err)
	}
	var got []string
	for _, p := range pe.problems {
		got = append(got, p.pointer+" "+p.text)
	}
	want := []string{
		"/apis/orders/identifier ${ORDERS_URL}",
		"/apis/orders/scopes/0/value ${SCOPE}",
		"/a~1b/c~0d ${lower}",
		"/a~1b/c~0d ${UNCLOSED",
		"/e ${LIST}",
		"/f ${MISSING}",
		"/g ${" + strings.Repeat("A", 38) + "…",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	msg := err.Error()
	for _, w := range []string{"7 placeholder(s) of doc.json", "nothing was sent", "/apis/orders/identifier: ${ORDERS_URL} has no value", "$${"} {
		if !strings.Contains(msg, w) {
			t.Errorf("message lacks %q:\n%s", w, msg)
		}
	}
}

func TestPlaceholdersForIsTheReverseOfSubstitute(t *testing.T) {
	t.Parallel()
	prod := testVars(t, map[string]string{"HOST": `"https://api.shop.example"`, "NAME": `"Shop"`, "LIFETIME": `3600`, "EMPTY": `""`})
	export := json.RawMessage(`{"apis":{"orders":{"identifier":"https://api.shop.example","display_name":"Shop",` +
		`"description":"Shop's ${not a placeholder} $${","lifetime":3600,"x":"https://api.shop.example/v2","e":""}},"Shop":1}`)
	templ, used, inside, err := placeholdersFor(export, prod)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/apis/orders/description holds the value of NAME inside a longer string: only whole values become placeholders, so it is kept as it is",
		"/apis/orders/x holds the value of HOST inside a longer string: only whole values become placeholders, so it is kept as it is"}; !cmp.Equal(want, inside) {
		t.Errorf("inside (-want +got):\n%s", cmp.Diff(want, inside))
	}
	want := `{"apis":{"orders":{"identifier":"${HOST}","display_name":"${NAME}",` +
		`"description":"Shop's $${not a placeholder} $$${","lifetime":3600,"x":"https://api.shop.example/v2","e":""}},"Shop":1}`
	if string(templ) != want {
		t.Errorf("placeholdersFor:\n got %s\nwant %s", templ, want)
	}
	if !used["HOST"] || !used["NAME"] || used["LIFETIME"] || used["EMPTY"] {
		t.Errorf("used = %v", used)
	}
	// Filled in with the same values, the template is the export again.
	back, err := substitute("t", templ, prod)
	if err != nil {
		t.Fatal(err)
	}
	if string(back.doc) != string(export) {
		t.Errorf("round trip:\n got %s\nwant %s", back.doc, export)
	}
}

func TestPlaceholdersForRefusesAValueOfTwoVariables(t *testing.T) {
	t.Parallel()
	vars := testVars(t, map[string]string{"A": `"same"`, "B": `"same"`, "C": `"other"`})
	_, _, _, err := placeholdersFor(json.RawMessage(`{"x":{"y":"same"},"z":"other"}`), vars)
	if err == nil || !strings.Contains(err.Error(), `/x/y: "same" is the value of A and B`) {
		t.Fatalf("err = %v", err)
	}
	var ue *usageError
	if !errors.As(err, &ue) {
		t.Errorf("err is not a usage error: %T", err)
	}
}

func TestReadVariablesLaterFilesAndVarWin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.yaml", "HOST: a.example\nPORT: 8080\nLIST: [x, y]\nKEEP: from-a\n")
	b := write("b.json", `{"HOST": "b.example", "OBJ": {"k": 1}}`)
	vars, err := readVariables([]string{a, b}, []string{"PORT=9090", "EQ=a=b"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for k, v := range vars {
		got[k] = string(v.value) + " " + filepath.Base(v.source)
	}
	want := map[string]string{"HOST": `"b.example" b.json`, "PORT": `"9090" --var`, "LIST": `["x","y"] a.yaml`,
		"KEEP": `"from-a" a.yaml`, "OBJ": `{"k":1} b.json`, "EQ": `"a=b" --var`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("variables (-want +got):\n%s", diff)
	}

	for _, tc := range []struct {
		files, vars []string
		want        string
	}{
		{[]string{write("bad.json", `{"lower": 1, "OK": 2, "9X": 3}`)}, nil, `"9X", "lower": a variable's name`},
		{[]string{write("list.yaml", "- a\n- b\n")}, nil, "is not a YAML mapping"},
		{[]string{write("null.json", "null")}, nil, "not null"},
		{[]string{filepath.Join(dir, "missing.yaml")}, nil, "cannot read the variables"},
		{nil, []string{"NOEQUALS"}, "is not NAME=VALUE"},
		{nil, []string{"bad-name=x"}, "a variable's name"},
	} {
		_, err := readVariables(tc.files, tc.vars)
		var ue *usageError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ue) {
			t.Errorf("readVariables(%v, %v) = %v, want a usage error with %q", tc.files, tc.vars, err, tc.want)
		}
	}
}
