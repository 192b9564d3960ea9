package plans

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/canonjson"
	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/config/displayname"
	"github.com/keenauth/configplans/configdb"
)

// The unique values as they were read before the apply computed them once
// per change: UniqueValues, topLevelMember and skipValue as they were, the
// references the scan of today is held to, byte for byte, on any input
// (valid JSON or not: a spec is always valid JSON where it comes from, but
// what the scan answers for the rest must not change either).

func uniqueValuesReference(kind config.Kind, raw json.RawMessage) []config.UniqueValue {
	field := ""
	switch kind {
	case config.KindConnection, config.KindRole:
		field = "display_name"
	case config.KindAPI:
		field = "identifier"
	default:
		return nil
	}
	value, ok := topLevelMemberReference(raw, field)
	if !ok {
		var members struct {
			DisplayName json.RawMessage `json:"display_name"`
			Identifier  json.RawMessage `json:"identifier"`
		}
		if json.Unmarshal(raw, &members) != nil {
			return nil
		}
		value = members.DisplayName
		if field == "identifier" {
			value = members.Identifier
		}
	}
	v, ok := config.JSONString(value)
	if !ok || v == "" {
		return nil
	}
	key := v
	if field == "display_name" {
		key = displayname.Key(v)
	}
	return []config.UniqueValue{{Field: field, Value: v, Key: key}}
}

func displayNameKeyReference(k config.Kind, spec json.RawMessage) *string {
	for _, u := range uniqueValuesReference(k, spec) {
		if u.Field == "display_name" {
			return &u.Key
		}
	}
	return nil
}

func topLevelMemberReference(raw []byte, name string) (value json.RawMessage, ok bool) {
	i := canonjson.SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	i = canonjson.SkipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return nil, canonjson.SkipSpace(raw, i+1) == len(raw)
	}
	for {
		if i >= len(raw) || raw[i] != '"' {
			return nil, false
		}
		end := i + 1
		for end < len(raw) && raw[end] != '"' {
			if raw[end] == '\\' {
				return nil, false
			}
			end++
		}
		if end >= len(raw) {
			return nil, false
		}
		key := raw[i+1 : end]
		i = canonjson.SkipSpace(raw, end+1)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = canonjson.SkipSpace(raw, i+1)
		vEnd, valid := skipValueReference(raw, i)
		if !valid {
			return nil, false
		}
		if string(key) == name {
			value = raw[i:vEnd]
		} else if strings.EqualFold(string(key), name) {
			return nil, false
		}
		i = canonjson.SkipSpace(raw, vEnd)
		if i >= len(raw) {
			return nil, false
		}
		switch raw[i] {
		case ',':
			i = canonjson.SkipSpace(raw, i+1)
		case '}':
			return value, canonjson.SkipSpace(raw, i+1) == len(raw)
		default:
			return nil, false
		}
	}
}

func skipValueReference(b []byte, i int) (int, bool) {
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			i++
			for i < len(b) && b[i] != '"' {
				if b[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(b) {
				return 0, false
			}
			i++
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i, true
			}
			depth--
			i++
		case ',':
			if depth == 0 {
				return i, true
			}
			i++
		default:
			i++
		}
		if depth == 0 && i < len(b) {
			if j := canonjson.SkipSpace(b, i); j < len(b) && (b[j] == ',' || b[j] == '}' || b[j] == ']') {
				return i, true
			}
		}
	}
	return i, depth == 0
}

// genSpecText is a random JSON text shaped like a spec: an object whose
// members are unique-value names (or near them), nested values and
// strings with escapes, quotes, backslashes and long plain runs, with
// random spacing.
func genSpecText(rng *rand.Rand) []byte {
	var b []byte
	sp := func() {
		for rng.IntN(4) == 0 {
			b = append(b, " \t\n\r"[rng.IntN(4)])
		}
	}
	str := func() {
		b = append(b, '"')
		for n := rng.IntN(40); n > 0; n-- {
			switch rng.IntN(12) {
			case 0:
				b = append(b, `\"`...)
			case 1:
				b = append(b, `\\`...)
			case 2:
				b = append(b, `\u00e9`...)
			case 3:
				b = append(b, "é"...)
			case 4:
				b = append(b, strings.Repeat("plain text ", rng.IntN(8))...)
			case 5:
				b = append(b, byte(rng.IntN(0x20)))
			default:
				b = append(b, byte('a'+rng.IntN(26)))
			}
		}
		b = append(b, '"')
	}
	names := []string{"identifier", "display_name", "Identifier", "DISPLAY_NAME", "ident\\u0069fier", "scopes", "description", "value", "x"}
	var value func(depth int)
	value = func(depth int) {
		sp()
		switch k := rng.IntN(7); {
		case k == 0 && depth < 4:
			b = append(b, '[')
			for n := rng.IntN(4); n > 0; n-- {
				value(depth + 1)
				if n > 1 {
					b = append(b, ',')
				}
			}
			sp()
			b = append(b, ']')
		case k == 1 && depth < 4:
			b = append(b, '{')
			for n := rng.IntN(4); n > 0; n-- {
				sp()
				b = append(b, fmt.Sprintf("%q", names[rng.IntN(len(names))])...)
				sp()
				b = append(b, ':')
				value(depth + 1)
				if n > 1 {
					b = append(b, ',')
				}
			}
			sp()
			b = append(b, '}')
		case k == 2:
			b = append(b, []string{"true", "false", "null", "12", "-1.5e3"}[rng.IntN(5)]...)
		default:
			str()
		}
		sp()
	}
	sp()
	b = append(b, '{')
	for n := rng.IntN(6); n > 0; n-- {
		sp()
		b = append(b, '"')
		b = append(b, names[rng.IntN(len(names))]...)
		b = append(b, '"')
		sp()
		b = append(b, ':')
		value(1)
		if n > 1 {
			b = append(b, ',')
		}
	}
	sp()
	b = append(b, '}')
	sp()
	return b
}

// damage damages b in one of the ways a scan must not get wrong: a byte
// dropped, changed or added, or the text cut short.
func damage(rng *rand.Rand, b []byte) []byte {
	b = append([]byte(nil), b...)
	if len(b) == 0 {
		return b
	}
	i := rng.IntN(len(b))
	special := []byte(`"\{}[],: ` + "\x00")
	switch rng.IntN(4) {
	case 0:
		return append(b[:i], b[i+1:]...)
	case 1:
		b[i] = special[rng.IntN(len(special))]
		return b
	case 2:
		return append(b[:i], append([]byte{special[rng.IntN(len(special))]}, b[i:]...)...)
	default:
		return b[:i]
	}
}

// checkUniqueScan holds UniqueValues, displayNameKey and skipValue (at
// every offset of a short spec, at 200 of a long one) to the references on
// spec.
func checkUniqueScan(t *testing.T, spec []byte) bool {
	t.Helper()
	for _, k := range []config.Kind{config.KindAPI, config.KindRole, config.KindConnection, config.KindApplication, config.KindEnvironmentSettings} {
		if diff := cmp.Diff(uniqueValuesReference(k, spec), config.UniqueValues(k, spec)); diff != "" {
			t.Errorf("UniqueValues(%s, %q) (-reference +got):\n%s", k, spec, diff)
			return false
		}
		if diff := cmp.Diff(displayNameKeyReference(k, spec), config.DisplayNameKey(k, spec)); diff != "" {
			t.Errorf("displayNameKey(%s, %q) (-reference +got):\n%s", k, spec, diff)
			return false
		}
	}
	for n := range min(len(spec)+1, 200) {
		i := n
		if len(spec) >= 200 {
			i = n * (len(spec) + 1) / 200
		}
		wantEnd, wantOK := skipValueReference(spec, i)
		if end, ok := canonjson.SkipValue(spec, i); end != wantEnd || ok != wantOK {
			t.Errorf("skipValue(%q, %d) = %d, %v, want %d, %v", spec, i, end, ok, wantEnd, wantOK)
			return false
		}
	}
	return true
}

// TestUniqueValuesAsTheReference holds the scan to the former one over
// generated specs and damaged copies of them. CODEC_SEED=n replays a run.
func TestUniqueValuesAsTheReference(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		`{"identifier":"a","identifier":"b"}`, `{"identifier":"a\"b\\","x":"\\"}`, `{"x":"\\\"","identifier":"y"}`,
		`{"x":"a\`, `{"x":"\`, `{"x":"`, `{"identifier":"x"`, `{"identifier":"x",}`, `{"identifier":"x"]`,
		`{"display_name":"A","d":[{"e":"\"}"}]}`, `{"display_name":"A","d":"` + strings.Repeat("long plain text ", 40) + `"}`,
		`{"display_name":"A","d":"` + strings.Repeat("x\\\"y", 40) + `"}`, "{\"display_name\":\"A\x01\"}", "{\"a\":\"\x00\",\"identifier\":\"i\"}",
	} {
		checkUniqueScan(t, []byte(s))
	}
	seed := codecSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	for i := range 3000 {
		spec := genSpecText(rng)
		if !checkUniqueScan(t, spec) || !checkUniqueScan(t, damage(rng, spec)) {
			t.Fatalf("CODEC_SEED=%d, case %d", seed, i)
		}
	}
}

func FuzzUniqueValuesAsTheReference(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20 {
		f.Add(genSpecText(rng))
	}
	f.Add([]byte(`{"identifier":"a\"b\\","x":"\\"}`))
	f.Fuzz(func(t *testing.T, spec []byte) {
		checkUniqueScan(t, spec)
	})
}

func BenchmarkUniqueValues(b *testing.B) {
	p := benchPlan(1000)
	b.Run("reference", func(b *testing.B) {
		for b.Loop() {
			for _, c := range p.Changes {
				uniqueValuesReference(c.Kind, c.Spec)
			}
		}
	})
	b.Run("UniqueValues", func(b *testing.B) {
		for b.Loop() {
			for _, c := range p.Changes {
				config.UniqueValues(c.Kind, c.Spec)
			}
		}
	})
}

// checkUniqueValuesReference is row 14 as it was, reading each change's
// unique values for the holders and again for the check.
func checkUniqueValuesReference(st *applyState) error {
	var dups []config.FieldError
	holders := map[config.Kind]map[config.UniqueKey][]string{}
	for i, c := range st.plan.Changes {
		if c.Action != ActionCreate && c.Action != ActionUpdate {
			continue
		}
		for _, u := range uniqueValuesReference(c.Kind, c.Spec) {
			if holders[c.Kind] == nil {
				holders[c.Kind] = map[config.UniqueKey][]string{}
				st.post.each(c.Kind, func(key string, spec json.RawMessage) {
					for _, u := range uniqueValuesReference(c.Kind, spec) {
						holders[c.Kind][u.Compared()] = append(holders[c.Kind][u.Compared()], key)
					}
				})
			}
			for _, other := range holders[c.Kind][u.Compared()] {
				if other != c.Key {
					dups = append(dups, config.FieldError{Pointer: fmt.Sprintf("/changes/%d/spec/%s", i, u.Field), Code: config.CodeDuplicate,
						Detail: fmt.Sprintf("%s %s is used by %s", u.Field, config.QuoteShort(u.Value), resourceRef(c.Kind, other))})
				}
			}
		}
	}
	return failing(config.CodeConflict, "another resource already uses a unique value of this plan", dups)
}

// genUniqueState is an apply's state whose stored resources and changes
// draw their keys and unique values from small pools, so that values
// collide (display names also by case), with deletions, no-ops, changes
// without a unique value and a resource changed twice.
func genUniqueState(rng *rand.Rand) *applyState {
	kinds := []config.Kind{config.KindAPI, config.KindRole, config.KindConnection, config.KindApplication}
	names := []string{"Main", "MAIN", "main", "Other", "CAFE\u0301", "caf\u00e9", ""}
	spec := func(k config.Kind) string {
		v := names[rng.IntN(len(names))]
		switch rng.IntN(5) {
		case 0:
			return `{"description":"none"}`
		case 1:
			return fmt.Sprintf(`{"display_name":%q,"identifier":%q,"display_name":"Last"}`, v, v)
		}
		return fmt.Sprintf(`{"display_name":%q,"identifier":"https://%s.example","scopes":[{"value":"a"}]}`, v, v)
	}
	var rows []*configdb.Resource
	for n := rng.IntN(8); n > 0; n-- {
		k := kinds[rng.IntN(len(kinds))]
		rows = append(rows, stored(k, fmt.Sprintf("k%d", rng.IntN(6)), 1+rng.IntN(3), spec(k)))
	}
	var changes []Change
	for n := rng.IntN(10); n > 0; n-- {
		k := kinds[rng.IntN(len(kinds))]
		key := fmt.Sprintf("k%d", rng.IntN(6))
		switch action := pick(rng, ActionCreate, ActionUpdate, ActionDelete, ActionNoOp); action {
		case ActionDelete, ActionNoOp:
			changes = append(changes, Change{Kind: k, Key: key, Action: action})
		default:
			changes = append(changes, change(action, k, key, spec(k)))
		}
	}
	return applyFixture(rows, changes...)
}

// TestCheckUniqueValuesAsTheReference holds row 14 to the former one over
// generated states. CODEC_SEED=n replays a run.
func TestCheckUniqueValuesAsTheReference(t *testing.T) {
	t.Parallel()
	seed := codecSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x27d4eb2f))
	conflicts := 0
	for i := range 3000 {
		st := genUniqueState(rng)
		want := checkUniqueValuesReference(st)
		if want != nil {
			conflicts++
		}
		if diff := cmp.Diff(want, checkUniqueValues(st)); diff != "" {
			t.Fatalf("CODEC_SEED=%d, case %d: checkUniqueValues (-reference +got):\n%s", seed, i, diff)
		}
	}
	if conflicts < 300 {
		t.Fatalf("CODEC_SEED=%d: only %d of the states have a conflict", seed, conflicts)
	}
}

// BenchmarkApplyUniqueValues is the unique-value work of an apply of
// P1's plan: the need's (loadApplyState), row 14's and the writes'
// (displayNameKey), before and now.
func BenchmarkApplyUniqueValues(b *testing.B) {
	p := benchPlan(1000)
	st := applyFixture(nil, p.Changes...)
	b.Run("reference", func(b *testing.B) {
		for b.Loop() {
			for _, c := range p.Changes {
				uniqueValuesReference(c.Kind, c.Spec)
			}
			if checkUniqueValuesReference(st) != nil {
				b.Fatal("a conflict")
			}
			for _, c := range p.Changes {
				displayNameKeyReference(c.Kind, c.Spec)
			}
		}
	})
	b.Run("now", func(b *testing.B) {
		for b.Loop() {
			for _, c := range p.Changes {
				config.UniqueValues(c.Kind, c.Spec)
			}
			if checkUniqueValues(st) != nil {
				b.Fatal("a conflict")
			}
			for _, c := range p.Changes {
				config.DisplayNameKey(c.Kind, c.Spec)
			}
		}
	})
}
