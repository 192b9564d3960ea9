package cli

import (
	"strings"
	"testing"
)

func TestUnwrapDocumentTakesAnExportOrABareDocument(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][2]string{
		`{"apis": {}}`:                                   {`{"apis": {}}`, ""},
		"\xef\xbb\xbf  {\"apis\": {}}\n":                 {`{"apis": {}}`, ""},
		`{"config": {"apis": {}}}`:                       {`{"apis": {}}`, ""},
		`{"config": {"apis": {}}, "versions": {"a": 1}}`: {`{"apis": {}}`, `{"a": 1}`},
		`{"config": {"apis": {}}, "versions": null}`:     {`{"apis": {}}`, ""},
		// An editor's "$schema" is dropped, from a bare document as from an
		// export; the other members are sent as they are, in their order.
		`{"$schema": "https://x.example/v1/config-schema.json", "roles": {"r": null},  "apis": {}}`: {`{"roles":{"r": null},"apis":{}}`, ""},
		`{"apis": {}, "$schema": "s"}`:                                   {`{"apis":{}}`, ""},
		`{"$schema": "s", "config": {"apis": {}}, "versions": {"a": 1}}`: {`{"apis": {}}`, `{"a": 1}`},
		// A bare document's "versions" is a document key (refused by the API).
		`{"versions": {"a": 1}}`: {`{"versions": {"a": 1}}`, ""},
	} {
		got, err := unwrapDocument("f", []byte(in))
		if err != nil || string(got.config) != want[0] || string(got.versions) != want[1] {
			t.Errorf("unwrapDocument(%q) = %q, %q, %v; want %q", in, got.config, got.versions, err, want)
		}
	}
	for in, want := range map[string]string{
		"":                               "f is empty",
		"null":                           "f is not a JSON object: it holds null",
		`"text"`:                         "f is not a JSON object: the top level is a JSON string",
		"{\n\"apis\": }":                 "(line 2, column 9)",
		`{"config": {}, "prune": true}`:  `an export has no member "prune"`,
		`{"config": {}, "b": 1, "a": 2}`: `an export has no member "a", "b"`,
	} {
		_, err := unwrapDocument("f", []byte(in))
		if err == nil || !strings.Contains(err.Error(), want) || exitCode(err) != ExitUsage {
			t.Errorf("unwrapDocument(%q) error %v, want %q (exit 2)", in, err, want)
		}
	}
}

func TestYAMLIsReadAsTheJSONItStandsFor(t *testing.T) {
	t.Parallel()
	in := `# a comment
$schema: https://config.keenauth.example/v1/config-schema.json
apis:
  orders:
    display_name: "Orders: the API"
    identifier: https://api.shop.example/orders
    token_lifetime_seconds: 3600
    ratio: 0.5
    scopes:
      - {value: "read:orders", description: Read orders}
connections:
  legacy: ~
  github: &gh
    type: social
    active: yes
    enabled: true
  github-2: *gh
  "with/slash": null
1: one
`
	want := `{"$schema":"https://config.keenauth.example/v1/config-schema.json","apis":{"orders":{"display_name":"Orders: the API",` +
		`"identifier":"https://api.shop.example/orders","token_lifetime_seconds":3600,"ratio":0.5,` +
		`"scopes":[{"value":"read:orders","description":"Read orders"}]}},"connections":{"legacy":null,` +
		`"github":{"type":"social","active":"yes","enabled":true},"github-2":{"type":"social","active":"yes","enabled":true},"with/slash":null},"1":"one"}`
	got, err := yamlToJSON("f.yaml", []byte(in))
	if err != nil || string(got) != want {
		t.Fatalf("yamlToJSON:\n got %s, %v\nwant %s", got, err, want)
	}
	// Wrapped as an export, it is unwrapped as a JSON export is.
	doc, err := unwrapDocument("f.yaml", mustYAML(t, "config:\n  apis: {}\nversions:\n  api/orders: 3\n"))
	if err != nil || string(doc.config) != `{"apis":{}}` || string(doc.versions) != `{"api/orders":3}` {
		t.Errorf("export in YAML: %s %s, %v", doc.config, doc.versions, err)
	}
}

func mustYAML(t *testing.T, s string) []byte {
	t.Helper()
	b, err := yamlToJSON("f.yaml", []byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestYAMLFailuresNameTheLineAndColumn(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"apis:\n  orders:\n    scopes: [a,\n    b: 2\n": "f.yaml is not valid YAML: line 3, column 13: sequence end token ']' not found",
		"apis:\n  orders: 1\n  orders: 2\n":             `f.yaml is not valid YAML: line 3, column 3: mapping key "orders" already defined at [2:3]`,
		"apis:\n  - a\n - b\n":                          "f.yaml is not valid YAML: line 3, column 2: ",
		"apis: {}\n---\nroles: {}\n":                    "f.yaml holds more than one YAML document (---)",
		"- apis\n":                                      "f.yaml is not a YAML mapping: its top level is a sequence",
		"just words\n":                                  "f.yaml is not a YAML mapping: its top level is a scalar",
		"# only a comment\n":                            "f.yaml is empty",
		"apis:\n  orders:\n    lifetime: .inf\n":        "the value at /apis/orders/lifetime (+Inf) is not a JSON number",
		"apis:\n  orders:\n    blob: !!binary aGk=\n":   "the value at /apis/orders/blob ([]uint8) has no JSON form",
	} {
		_, err := yamlToJSON("f.yaml", []byte(in))
		if err == nil || !strings.Contains(err.Error(), want) || exitCode(err) != ExitUsage {
			t.Errorf("yamlToJSON(%q) error %v, want %q (exit 2)", in, err, want)
		}
	}
}

func TestYAMLIsDetectedByExtensionOrContent(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		path, content string
		yaml          bool
	}{
		{"c.yaml", `{"apis": {}}`, true},
		{"c.YML", "apis: {}", true},
		{"c.json", "apis: {}", false},
		{"-", "apis: {}", true},
		{"-", "\xef\xbb\xbf\n  {\"apis\": {}}", false},
		{"-", "[]", false},
		{"config", "# YAML\napis: {}", true},
		{"-", "", false},
	} {
		if got := isYAML(c.path, []byte(c.content)); got != c.yaml {
			t.Errorf("isYAML(%q, %q) = %v", c.path, c.content, got)
		}
	}
}
