package plans

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/keenauth/configplans/config"
)

// The spec helpers of the configuration model's tests that the plan's tests
// use too (test files of one package are not visible from another).

// validSpecs holds one valid spec per kind, which the rule cases edit.
var validSpecs = map[config.Kind]string{
	config.KindEnvironmentSettings: `{"display_name": "Shop", "default_locale": "en", "session_lifetime_hours": 72}`,
	config.KindIdentitySettings: `{"allowed_identifiers": ["email"], "mfa": "optional",
		"password_policy": {"min_length": 8, "require_digits": false, "require_symbols": false}}`,
	config.KindAttackProtection: `{"bot_detection": "off", "breached_password_detection": {"enabled": false},
		"brute_force": {"enabled": true, "max_attempts": 10}}`,
	config.KindBranding:            `{"primary_color": "#635bff"}`,
	config.KindApplicationBranding: `{"primary_color": "#635bff"}`,
	config.KindConnection: `{"type": "enterprise", "display_name": "ACME", "active": false,
		"oidc": {"issuer": "https://idp.acme.example", "client_id": "abc", "scopes": ["openid", "email"]}}`,
	config.KindAPI: `{"identifier": "https://api.shop.example/orders", "display_name": "Orders",
		"scopes": [{"value": "read:orders", "description": "Read orders"}], "token_lifetime_seconds": 3600}`,
	config.KindRole: `{"display_name": "Admin", "permissions": [{"api": "orders", "scope": "read:orders"}]}`,
	config.KindApplication: `{"display_name": "Portal", "type": "regular_web", "callback_urls": ["https://portal.shop.example/callback"],
		"connections": ["acme-sso"], "api_grants": [{"api": "orders", "scopes": ["read:orders"]}]}`,
}

// absent, as an edit value, removes the member.
const absent = "<absent>"

// edit returns the valid spec of kind with members replaced: each pair is a
// pointer (without escaping) and the JSON text of its new value, or absent.
func edit(t *testing.T, kind config.Kind, pairs ...string) json.RawMessage {
	t.Helper()
	var root any
	if err := json.Unmarshal([]byte(validSpecs[kind]), &root); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(pairs); i += 2 {
		tokens := strings.Split(strings.TrimPrefix(pairs[i], "/"), "/")
		var value any
		if pairs[i+1] != absent {
			if err := json.Unmarshal([]byte(pairs[i+1]), &value); err != nil {
				t.Fatalf("value %s: %v", pairs[i+1], err)
			}
		}
		parent := root
		for _, tok := range tokens[:len(tokens)-1] {
			switch p := parent.(type) {
			case map[string]any:
				parent = p[tok]
			case []any:
				var n int
				fmt.Sscan(tok, &n)
				parent = p[n]
			}
		}
		last := tokens[len(tokens)-1]
		switch p := parent.(type) {
		case map[string]any:
			if pairs[i+1] == absent {
				delete(p, last)
			} else {
				p[last] = value
			}
		case []any:
			var n int
			fmt.Sscan(last, &n)
			p[n] = value
		default:
			t.Fatalf("edit %s: no parent", pairs[i])
		}
	}
	b, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustDecode(raw json.RawMessage) any {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		panic(fmt.Sprintf("decode %s: %v", raw, err))
	}
	return v
}

// subset is a random selection of pool in random order.
func subset[T any](rng *rand.Rand, pool []T) []any {
	p := slices.Clone(pool)
	rng.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
	out := []any{}
	for _, v := range p[:rng.IntN(len(p)+1)] {
		out = append(out, v)
	}
	return out
}

func pick[T any](rng *rand.Rand, pool ...T) T { return pool[rng.IntN(len(pool))] }

func genApplication(rng *rand.Rand) map[string]any {
	grants := []any{}
	for _, api := range subset(rng, []string{"orders", "users", "billing", "search"}) {
		grants = append(grants, map[string]any{"api": api, "scopes": subset(rng, []string{"read", "write", "admin", "delete"})})
	}
	return map[string]any{
		"display_name":  pick(rng, "Portal", "Shop"),
		"type":          pick(rng, "spa", "regular_web"),
		"callback_urls": subset(rng, []string{"https://a.example/cb", "https://b.example/cb", "http://localhost:3000/cb", "https://c.example/cb"}),
		"connections":   subset(rng, []string{"acme-sso", "github", "legacy", "db", "google"}),
		"api_grants":    grants,
	}
}

func genAPI(rng *rand.Rand) map[string]any {
	scopes := []any{}
	for _, v := range subset(rng, []string{"read:orders", "write:orders", "admin", "a/b~c"}) {
		s := map[string]any{"value": v}
		if d := pick(rng, "", "Read", "Write"); d != "" {
			s["description"] = d
		}
		scopes = append(scopes, s)
	}
	return map[string]any{
		"identifier":             "https://api.example/" + pick(rng, "orders", "users"),
		"display_name":           pick(rng, "Orders", "Users"),
		"scopes":                 scopes,
		"token_lifetime_seconds": json.Number(pick(rng, "60", "3600")),
	}
}

// mutate returns a copy of spec with random edits to its lists (elements
// removed, inserted at random places, edited in place, now and then two
// swapped) and now and then to a scalar member.
func mutate(rng *rand.Rand, spec map[string]any) map[string]any {
	out := mustDecode(config.CanonicalJSON(spec)).(map[string]any)
	pools := map[string][]any{
		"callback_urls":       {"https://d.example/cb", "https://e.example/cb"},
		"connections":         {"okta", "azure"},
		"allowed_identifiers": {"email", "username", "phone"},
		"permissions":         {map[string]any{"api": "search", "scope": "read"}, map[string]any{"api": "orders", "scope": "write"}},
		"scopes":              {map[string]any{"value": "new:a"}, map[string]any{"value": "new:b", "description": "B"}},
		"api_grants":          {map[string]any{"api": "extra", "scopes": []any{"read"}}, map[string]any{"api": "more", "scopes": []any{}}},
	}
	for k, v := range out {
		switch k {
		case "display_name", "mfa":
			if rng.IntN(4) == 0 {
				out[k] = v.(string) + "!"
			}
		case "oidc":
			if o, ok := v.(map[string]any); ok {
				o["scopes"] = mutateList(rng, o["scopes"].([]any), []any{"offline_access", "email"}, nil)
				if rng.IntN(4) == 0 {
					out[k] = nil
				}
			}
		case "scopes":
			out[k] = mutateList(rng, v.([]any), pools[k], func(e any) {
				s := e.(map[string]any)
				if _, ok := s["description"]; ok && rng.IntN(2) == 0 {
					delete(s, "description")
				} else {
					s["description"] = pick(rng, "Changed", "Other")
				}
			})
		case "api_grants":
			out[k] = mutateList(rng, v.([]any), pools[k], func(e any) {
				g := e.(map[string]any)
				g["scopes"] = mutateList(rng, g["scopes"].([]any), []any{"export", "import"}, nil)
			})
		case "callback_urls", "connections", "allowed_identifiers", "permissions":
			out[k] = mutateList(rng, v.([]any), pools[k], nil)
		}
	}
	return out
}

// mutateList edits a list: removes some elements, edits some in place (with
// edit), inserts elements of pool it does not hold at random places, and
// now and then swaps two.
func mutateList(rng *rand.Rand, list, pool []any, edit func(any)) []any {
	out := []any{}
	for _, e := range list {
		if rng.IntN(4) == 0 {
			continue
		}
		if edit != nil && rng.IntN(3) == 0 {
			edit(e)
		}
		out = append(out, e)
	}
	for _, e := range pool {
		held := slices.ContainsFunc(out, func(x any) bool { return identityOfTestElement(x) == identityOfTestElement(e) })
		if !held && rng.IntN(2) == 0 {
			out = slices.Insert(out, rng.IntN(len(out)+1), mustDecode(config.CanonicalJSON(e)))
		}
	}
	if len(out) > 1 && rng.IntN(8) == 0 {
		i, j := rng.IntN(len(out)), rng.IntN(len(out))
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// identityOfTestElement identifies a generated element: a string, or an
// object by its value, api and scope members.
func identityOfTestElement(e any) string {
	if s, ok := e.(string); ok {
		return s
	}
	m := e.(map[string]any)
	return fmt.Sprint(m["value"], "\x00", m["api"], "\x00", m["scope"])
}

// spaced writes canonical JSON as jsonb does: members in jsonb's order
// (shorter names first) with a space after every colon and comma.
func spaced(b []byte) []byte {
	var out bytes.Buffer
	var write func(v any)
	write = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.SortFunc(keys, func(a, b string) int {
				if len(a) != len(b) {
					return len(a) - len(b)
				}
				return strings.Compare(a, b)
			})
			out.WriteByte('{')
			for i, k := range keys {
				if i > 0 {
					out.WriteString(", ")
				}
				out.Write(config.CanonicalJSON(k))
				out.WriteString(": ")
				write(x[k])
			}
			out.WriteByte('}')
		case []any:
			out.WriteByte('[')
			for i, e := range x {
				if i > 0 {
					out.WriteString(", ")
				}
				write(e)
			}
			out.WriteByte(']')
		default:
			out.Write(config.CanonicalJSON(x))
		}
	}
	write(mustDecode(b))
	return out.Bytes()
}
