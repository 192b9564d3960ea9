package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDiffAppliesToGeneratedSpecs checks Diff on random pairs of specs of
// every kind with lists: the operations applied in order to the old spec
// with RFC 6902 semantics give the new one, every old is the value at its
// path before its operation, and a list whose elements have an identity is
// replaced whole only when the elements both sides keep changed order.
// DIFF_SEED=n replays a run.
func TestDiffAppliesToGeneratedSpecs(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("DIFF_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("DIFF_SEED: %v", err)
		}
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	kinds := []func(*rand.Rand) map[string]any{genApplication, genAPI, genRole, genIdentitySettings, genEnterpriseConnection}
	for i := range 3000 {
		gen := kinds[i%len(kinds)]
		before := gen(rng)
		var after map[string]any
		if rng.IntN(3) == 0 {
			after = gen(rng) // unrelated: mostly reorderings
		} else {
			after = mutate(rng, before) // related: removals, additions, edits in place
		}
		b, a := CanonicalJSON(before), CanonicalJSON(after)
		ops := Diff(b, a)
		if !checkDiffApplies(t, fmt.Sprintf("DIFF_SEED=%d, case %d: ", seed, i), b, a, ops) {
			return
		}
	}
}

// checkDiffApplies applies ops to before and reports (prefixed with
// context) whatever breaks the properties of Diff; it returns false then.
func checkDiffApplies(t *testing.T, context string, before, after json.RawMessage, ops []DiffOp) bool {
	t.Helper()
	fail := func(format string, args ...any) bool {
		t.Helper()
		opsJSON, _ := json.Marshal(ops)
		t.Errorf("%s"+format+"\nbefore %s\nafter  %s\nops    %s", append(append([]any{context}, args...), before, after, opsJSON)...)
		return false
	}
	doc := mustDecode(before)
	for i, op := range ops {
		switch op.Op {
		case "add":
			if op.Old != nil {
				return fail("op %d (add %s) carries old", i, op.Path)
			}
		case "remove", "replace":
			if op.Old == nil {
				return fail("op %d (%s %s) carries no old", i, op.Op, op.Path)
			}
			cur, err := pointerGet(doc, op.Path)
			if err != nil {
				return fail("op %d (%s %s): %v", i, op.Op, op.Path, err)
			}
			if !reflect.DeepEqual(cur, mustDecode(op.Old)) {
				return fail("op %d (%s %s): old %s, but the value there is %s", i, op.Op, op.Path, op.Old, CanonicalJSON(cur))
			}
		}
		if op.Op == "replace" {
			if err := wholeReplaceJustified(op); err != nil {
				return fail("op %d: %v", i, err)
			}
		}
		var err error
		if doc, err = applyOp(doc, op); err != nil {
			return fail("op %d (%s %s): %v", i, op.Op, op.Path, err)
		}
	}
	if want := mustDecode(after); !reflect.DeepEqual(doc, want) {
		return fail("the ops give %s", CanonicalJSON(doc))
	}
	return true
}

// identityListPath matches the paths of the lists whose elements have an
// identity, with the member that identifies an object element ("" for
// strings).
var identityListPaths = []struct {
	path    *regexp.Regexp
	members []string
}{
	{regexp.MustCompile(`^/(allowed_identifiers|callback_urls|connections|oidc/scopes|api_grants/[0-9]+/scopes)$`), nil},
	{regexp.MustCompile(`^/scopes$`), []string{"value"}},
	{regexp.MustCompile(`^/permissions$`), []string{"api", "scope"}},
	{regexp.MustCompile(`^/api_grants$`), []string{"api"}},
}

// wholeReplaceJustified refuses a replace of a whole identity list from
// one list to another when the elements both keep are in the same order:
// that change has to be element by element.
func wholeReplaceJustified(op DiffOp) error {
	oldList, ok1 := mustDecode(op.Old).([]any)
	newList, ok2 := mustDecode(op.Value).([]any)
	if !ok1 || !ok2 {
		return nil
	}
	for _, l := range identityListPaths {
		if !l.path.MatchString(op.Path) {
			continue
		}
		id := func(e any) (string, bool) {
			if l.members == nil {
				s, ok := e.(string)
				return s, ok
			}
			obj, ok := e.(map[string]any)
			if !ok {
				return "", false
			}
			var parts []string
			for _, m := range l.members {
				v, ok := obj[m].(string)
				if !ok {
					return "", false
				}
				parts = append(parts, v)
			}
			return strings.Join(parts, "\x00"), true
		}
		ids := func(list []any) ([]string, bool) {
			var out []string
			for _, e := range list {
				s, ok := id(e)
				if !ok || slices.Contains(out, s) {
					return nil, false // no identity, or a repeated one
				}
				out = append(out, s)
			}
			return out, true
		}
		oldIDs, ok1 := ids(oldList)
		newIDs, ok2 := ids(newList)
		if !ok1 || !ok2 {
			return nil
		}
		keptOld := slices.DeleteFunc(slices.Clone(oldIDs), func(s string) bool { return !slices.Contains(newIDs, s) })
		keptNew := slices.DeleteFunc(slices.Clone(newIDs), func(s string) bool { return !slices.Contains(oldIDs, s) })
		if slices.Equal(keptOld, keptNew) {
			return fmt.Errorf("replace of the whole list %s, whose kept elements %q are in the same order", op.Path, keptOld)
		}
	}
	return nil
}

// The RFC 6902 applier of the test: add, remove and replace, on values
// decoded with UseNumber; "" is the whole document, absent as nil.

func applyOp(doc any, op DiffOp) (any, error) {
	tokens, err := pointerTokens(op.Path)
	if err != nil {
		return nil, err
	}
	var value any
	if op.Op != "remove" {
		value = mustDecode(op.Value)
	}
	if len(tokens) == 0 {
		switch op.Op {
		case "add":
			return value, nil
		case "replace", "remove":
			if doc == nil {
				return nil, fmt.Errorf("no document")
			}
			if op.Op == "remove" {
				return nil, nil
			}
			return value, nil
		}
		return nil, fmt.Errorf("unknown op %q", op.Op)
	}
	parentTokens, last := tokens[:len(tokens)-1], tokens[len(tokens)-1]
	parent, err := pointerGet(doc, pointerOf(parentTokens))
	if err != nil {
		return nil, err
	}
	var updated any
	switch p := parent.(type) {
	case map[string]any:
		_, exists := p[last]
		switch op.Op {
		case "add":
			p[last] = value
		case "replace":
			if !exists {
				return nil, fmt.Errorf("replace of the missing member %q", last)
			}
			p[last] = value
		case "remove":
			if !exists {
				return nil, fmt.Errorf("remove of the missing member %q", last)
			}
			delete(p, last)
		default:
			return nil, fmt.Errorf("unknown op %q", op.Op)
		}
		return doc, nil
	case []any:
		n := len(p)
		i, err := arrayIndex(last)
		if op.Op == "add" && last == "-" {
			i, err = n, nil
		}
		if err != nil {
			return nil, err
		}
		switch op.Op {
		case "add":
			if i > n {
				return nil, fmt.Errorf("add at index %d of a list of %d", i, n)
			}
			updated = slices.Insert(slices.Clone(p), i, value)
		case "replace", "remove":
			if i >= n {
				return nil, fmt.Errorf("%s at index %d of a list of %d", op.Op, i, n)
			}
			l := slices.Clone(p)
			if op.Op == "replace" {
				l[i] = value
			} else {
				l = slices.Delete(l, i, i+1)
			}
			updated = l
		default:
			return nil, fmt.Errorf("unknown op %q", op.Op)
		}
	default:
		return nil, fmt.Errorf("the parent of %s is neither an object nor a list", op.Path)
	}
	// A list changed length: put the new one where the old one was.
	if len(parentTokens) == 0 {
		return updated, nil
	}
	grand, _ := pointerGet(doc, pointerOf(parentTokens[:len(parentTokens)-1]))
	switch g := grand.(type) {
	case map[string]any:
		g[parentTokens[len(parentTokens)-1]] = updated
	case []any:
		i, _ := arrayIndex(parentTokens[len(parentTokens)-1])
		g[i] = updated
	}
	return doc, nil
}

// pointerGet is the value at an RFC 6901 pointer.
func pointerGet(doc any, ptr string) (any, error) {
	tokens, err := pointerTokens(ptr)
	if err != nil {
		return nil, err
	}
	cur := doc
	for _, tok := range tokens {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("%s: no member %q", ptr, tok)
			}
			cur = v
		case []any:
			i, err := arrayIndex(tok)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", ptr, err)
			}
			if i >= len(c) {
				return nil, fmt.Errorf("%s: index %d of a list of %d", ptr, i, len(c))
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("%s: %q inside a scalar", ptr, tok)
		}
	}
	return cur, nil
}

func pointerTokens(ptr string) ([]string, error) {
	if ptr == "" {
		return nil, nil
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, fmt.Errorf("pointer %q does not start with /", ptr)
	}
	tokens := strings.Split(ptr[1:], "/")
	for i, t := range tokens {
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens, nil
}

func pointerOf(tokens []string) string { return Pointer(tokens...) }

// arrayIndex is an RFC 6901 array index: digits, no leading zero.
func arrayIndex(tok string) (int, error) {
	if tok == "" || (len(tok) > 1 && tok[0] == '0') || strings.Trim(tok, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not an array index", tok)
	}
	return strconv.Atoi(tok)
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

// The generators: specs of the kinds with lists, drawn from small pools so
// that two specs share, lose and gain elements.

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

func genRole(rng *rand.Rand) map[string]any {
	var pairs []map[string]any
	for _, api := range []string{"orders", "users"} {
		for _, scope := range []string{"read", "write", "admin"} {
			pairs = append(pairs, map[string]any{"api": api, "scope": scope})
		}
	}
	r := map[string]any{"display_name": pick(rng, "Admin", "Viewer"), "permissions": subset(rng, pairs)}
	if rng.IntN(2) == 0 {
		r["description"] = pick(rng, "Admins", "Viewers")
	}
	return r
}

func genIdentitySettings(rng *rand.Rand) map[string]any {
	return map[string]any{
		"allowed_identifiers": subset(rng, []string{"email", "username", "phone"}),
		"password_policy":     map[string]any{"min_length": json.Number(pick(rng, "8", "12")), "require_digits": rng.IntN(2) == 0, "require_symbols": false},
		"mfa":                 pick(rng, "off", "optional", "required"),
	}
}

func genEnterpriseConnection(rng *rand.Rand) map[string]any {
	var oidc any
	if rng.IntN(5) > 0 {
		oidc = map[string]any{"issuer": "https://idp.example", "client_id": pick(rng, "abc", "def"),
			"scopes": subset(rng, []string{"openid", "email", "profile", "groups"})}
	}
	return map[string]any{"type": "enterprise", "display_name": pick(rng, "ACME", "Corp"), "active": rng.IntN(2) == 0, "oidc": oidc}
}

// mutate returns a copy of spec with random edits to its lists (elements
// removed, inserted at random places, edited in place, now and then two
// swapped) and now and then to a scalar member.
func mutate(rng *rand.Rand, spec map[string]any) map[string]any {
	out := mustDecode(CanonicalJSON(spec)).(map[string]any)
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
			out = slices.Insert(out, rng.IntN(len(out)+1), mustDecode(CanonicalJSON(e)))
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
