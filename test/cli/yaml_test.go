package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// exampleYAML is exampleWithDeletion written as a person writes YAML.
const exampleYAML = `# The SPEC §4 example, deleting legacy.
environment_settings:
  display_name: Shop
  default_locale: en
  session_lifetime_hours: 72
connections:
  legacy: null
  acme-sso:
    type: enterprise
    display_name: ACME
    active: false
    oidc:
      issuer: https://idp.acme.example
      client_id: abc
      scopes: [openid, email]
  github:
    type: social
    display_name: GitHub
    active: true
    social: {provider: github, use_own_credentials: false}
apis:
  orders:
    identifier: https://api.shop.example/orders
    display_name: Orders
    scopes:
      - value: "read:orders"
        description: Read orders
    token_lifetime_seconds: 3600
applications:
  portal:
    display_name: Portal
    type: regular_web
    callback_urls: ["https://portal.shop.example/callback"]
    connections: [acme-sso]
    api_grants:
      - api: orders
        scopes: ["read:orders"]
`

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// reviewed is what a plan answer says, without what differs between two
// plans of the same document (id, times).
func reviewed(p map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"changes", "warnings", "required_secrets", "requires_sp_host", "summary", "types", "prune", "status"} {
		out[k] = p[k]
	}
	return out
}

func TestYAMLPlansAsItsJSONEquivalent(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.seedLegacy(t)
	fromJSON := must(t, h.run(t, "config", "plan", "-f", writeJSON(t, "doc.json", exampleWithDeletion()), "--json")).JSON(t)
	for name, run := range map[string]func() result{
		".yaml": func() result {
			return h.run(t, "config", "plan", "-f", writeFile(t, "doc.yaml", exampleYAML), "--json")
		},
		".yml, as an export": func() result {
			return h.run(t, "config", "plan", "-f", writeFile(t, "doc.yml", exportOf(exampleYAML)), "--json")
		},
		"stdin": func() result {
			return h.runWith(t, invocation{stdin: exampleYAML}, "config", "plan", "-f", "-", "--json")
		},
		"no extension": func() result {
			return h.run(t, "config", "plan", "-f", writeFile(t, "keenauth", exampleYAML), "--json")
		},
	} {
		got := must(t, run()).JSON(t)
		if diff := cmp.Diff(reviewed(fromJSON), reviewed(got)); diff != "" {
			t.Errorf("%s: the plan differs from the JSON document's (-json +yaml):\n%s", name, diff)
		}
	}
}

// exportOf indents a document under config:, as an export in YAML.
func exportOf(doc string) string {
	var b strings.Builder
	b.WriteString("config:\n")
	for _, l := range strings.SplitAfter(doc, "\n") {
		if l != "" {
			b.WriteString("  " + l)
		}
	}
	b.WriteString("versions:\n  connection/legacy: 1\n")
	return b.String()
}

func TestYAMLRefusalsCarryTheJSONPointersAndSyntaxErrorsTheirPlace(t *testing.T) {
	t.Parallel()
	h := setup(t)
	invalid := map[string]any{"connections": map[string]any{"acme": map[string]any{
		"type": "enterprise", "display_name": "", "active": false,
		"oidc": map[string]any{"issuer": "http://idp.example", "client_id": "abc", "scopes": []string{"email"}}}}}
	invalidYAML := "connections:\n  acme:\n    type: enterprise\n    display_name: ''\n    active: false\n" +
		"    oidc:\n      issuer: http://idp.example\n      client_id: abc\n      scopes: [email]\n"
	fromJSON := h.run(t, "config", "plan", "-f", writeJSON(t, "invalid.json", invalid))
	fromYAML := h.run(t, "config", "plan", "-f", writeFile(t, "invalid.yaml", invalidYAML))
	wantExit(t, fromJSON, 1)
	wantExit(t, fromYAML, 1)
	pointers := func(s string) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "  /") {
				out = append(out, l)
			}
		}
		return out
	}
	if diff := cmp.Diff(pointers(fromJSON.stderr), pointers(fromYAML.stderr)); diff != "" || len(pointers(fromYAML.stderr)) < 3 {
		t.Errorf("the YAML document's problems differ from the JSON one's (-json +yaml):\n%s\n%s", diff, fromYAML.stderr)
	}

	bad := writeFile(t, "bad.yaml", "apis:\n  orders:\n    display_name: Orders\n   identifier: x\n")
	r := h.run(t, "config", "plan", "-f", bad)
	wantExit(t, r, 2)
	if !strings.Contains(r.stderr, "Error: "+bad+" is not valid YAML: line 4, column ") {
		t.Errorf("a YAML syntax error: %s", r.stderr)
	}
	dup := h.runWith(t, invocation{stdin: "apis: {}\napis: {}\n"}, "config", "plan", "-f", "-")
	wantExit(t, dup, 2)
	if !strings.Contains(dup.stderr, `Error: standard input is not valid YAML: line 2, column 1: mapping key "apis" already defined at [1:1]`) {
		t.Errorf("a repeated key: %s", dup.stderr)
	}
	if got := must(t, h.run(t, "plans", "list", "--json")).JSON(t)["data"].([]any); len(got) != 0 {
		t.Errorf("a refused document made plans: %v", got)
	}
}
