package canonjson

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// reference is the canonical form by encoding/json: a decode with
// UseNumber into an any and an encode without HTML escaping.
func reference(b []byte) ([]byte, bool) {
	if !json.Valid(b) {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, false
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, false
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), true
}

var seeds = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `1.5e+10`, `-12.25E-3`, `""`,
	`{"b": 1, "a": [1, 2, {"d": null, "c": true}]}`,
	`{"key": "api-1", "kind": "api", "spec_before": {"scopes": [{"value": "r", "description": "x"}], "identifier": "https://a/b?c=1&d=<e>"}}`,
	`{"a":1,"a":2}`, `{"a":{"x":1},"b":0,"a":{"y":2}}`,
	`"\u00e9t\u00E9 \u2028 \u2029 \u0007 \b\f\n\r\t \/ \" \\ <>& \ud83d\ude00 \ud800"`,
	`"caf` + "\xc3\xa9" + ` ` + "\xe2\x80\xa8" + ` ` + "\xff" + ` ` + "\x7f" + `"`,
	`{"\u0062":1,"a":2}`, `{"a\"":1,"a":2,"a\\":3,"a\n":4}`, `{"é":1,"z":2,"\u00e9":3}`,
	" \t\n[1 , 2 ]\r\n", `[1,2]x`, `{"a":1}{}`, `{"a" 1}`, `[1,]`, `{,}`, `01`, `1.`, `.5`, `-`, `1e`, `"\x"`, `"\u12"`,
	"\"a\x01\"", `tru`, `nul`, `[`, `{"a":`, `"abc`, `{"a":1,}`, `[1 2]`, `{"a":[{"b":[{"c":{}}]}]}`,
}

func check(t *testing.T, in []byte) {
	t.Helper()
	want, refOK := reference(in)
	got, ok := Append([]byte("prefix"), in)
	if ok != refOK {
		t.Fatalf("Append(%q) ok = %v, encoding/json %v (%q)", in, ok, refOK, want)
	}
	if ok && !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Fatalf("Append(%q) = %q, encoding/json %q", in, got[len("prefix"):], want)
	}
	if !ok && string(got) != "prefix" {
		t.Fatalf("Append(%q) failed but wrote %q", in, got)
	}
	if c := IsCanonical(in); c != (refOK && bytes.Equal(in, want)) {
		t.Fatalf("IsCanonical(%q) = %v; canonical form %q (ok %v)", in, c, want, refOK)
	}
}

func TestAppendAndIsCanonicalAgreeWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range seeds {
		check(t, []byte(s))
		if want, ok := reference([]byte(s)); ok {
			check(t, want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		v := genValue(rng, 0)
		b, _ := json.Marshal(v) // HTML escaped, members sorted
		check(t, b)
		ind, _ := json.MarshalIndent(v, " ", "\t")
		check(t, ind)
		check(t, shuffleMembers(rng, b))
		if i%10 == 0 && len(b) > 2 {
			// A cut value is not JSON.
			check(t, b[:rng.IntN(len(b))])
		}
	}
}

// TestAppenderReusedIsAppend: one Appender making many values canonical,
// one after the other (malformed ones and objects written again sorted
// among them), appends what Append appends for each.
func TestAppenderReusedIsAppend(t *testing.T) {
	t.Parallel()
	var a Appender
	var all, want []byte
	rng := rand.New(rand.NewPCG(3, 4))
	inputs := [][]byte{}
	for _, s := range seeds {
		inputs = append(inputs, []byte(s))
	}
	for range 3000 {
		b, _ := json.Marshal(genValue(rng, 0))
		inputs = append(inputs, shuffleMembers(rng, b), b[:rng.IntN(len(b)+1)])
	}
	for _, in := range inputs {
		var ok, refOK bool
		all, ok = a.Append(all, in)
		want, refOK = Append(want, in)
		if ok != refOK || !bytes.Equal(all, want) {
			t.Fatalf("Appender.Append(%q): ok %v and %d bytes in all, Append: ok %v and %d bytes", in, ok, len(all), refOK, len(want))
		}
	}
}

func TestAppendStringAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", "<a href=\"x\">&amp;</a>", "tab\tnl\ncr\r\x00\x1f\x7f", "é\u2028\u2029\xff\xfe", "\\/"} {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if got := AppendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

var alphabet = []string{"a", "b", "ab", "é", "<", "&", "\"", "\\", "\n", "\u2028", "\x01", "\xff", "z", "/", " ", "\x7f"}

func genString(rng *rand.Rand) string {
	var s string
	for range rng.IntN(4) {
		s += alphabet[rng.IntN(len(alphabet))]
	}
	return s
}

func genValue(rng *rand.Rand, depth int) any {
	n := 7
	if depth > 3 {
		n = 5
	}
	switch rng.IntN(n) {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return json.Number([]string{"0", "-1", "12.5", "1e3", "-0.0E-2", "123456789012345678901234567890"}[rng.IntN(6)])
	case 3, 4:
		return genString(rng)
	case 5:
		l := make([]any, rng.IntN(4))
		for i := range l {
			l[i] = genValue(rng, depth+1)
		}
		return l
	default:
		m := map[string]any{}
		for range rng.IntN(5) {
			m[genString(rng)] = genValue(rng, depth+1)
		}
		return m
	}
}

// shuffleMembers writes the compact JSON b again with every object's
// members in a random order, a repeated name sometimes added before the
// real one and spaces as jsonb writes them.
func shuffleMembers(rng *rand.Rand, b []byte) []byte {
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		panic(err)
	}
	var out bytes.Buffer
	var write func(v any)
	write = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
			out.WriteByte('{')
			for i, k := range keys {
				if i > 0 {
					out.WriteString(", ")
				}
				if rng.IntN(4) == 0 {
					fmt.Fprintf(&out, "%s: 0, ", must(json.Marshal(k)))
				}
				out.Write(must(json.Marshal(k)))
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
			out.Write(must(json.Marshal(x)))
		}
	}
	write(v)
	return out.Bytes()
}

func FuzzAppendAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { check(t, b) })
}

// TestPlainWordIsEveryBytePlain holds the eight-byte test of scanString to
// the byte-by-byte one: every byte value at every place among plain
// bytes, and random words.
func TestPlainWordIsEveryBytePlain(t *testing.T) {
	t.Parallel()
	plainByte := func(c byte) bool { return plainASCII[c] || c == 0x7f }
	want := func(x uint64) bool {
		for i := range 8 {
			if !plainByte(byte(x >> (8 * i))) {
				return false
			}
		}
		return true
	}
	for _, fill := range []byte{'a', ' ', '!', '#', '[', ']', '~', 0x7f} {
		for at := range 8 {
			for c := range 256 {
				var w [8]byte
				for i := range w {
					w[i] = fill
				}
				w[at] = byte(c)
				x := binary.LittleEndian.Uint64(w[:])
				if got := plainWord(x); got != want(x) {
					t.Fatalf("plainWord(%q) = %v", w, got)
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1_000_000 {
		x := rng.Uint64()
		if rng.IntN(2) == 0 {
			x &^= 0x8080808080808080 // ASCII only, so that plain words are common
		}
		if got := plainWord(x); got != want(x) {
			t.Fatalf("plainWord(%#x) = %v", x, got)
		}
	}
}

// TestLongStringsAgreeWithEncodingJSON puts every kind of byte that needs
// a look at every place of strings longer than a word, so that it falls
// inside, at the edge of and after the eight-byte runs of scanString.
func TestLongStringsAgreeWithEncodingJSON(t *testing.T) {
	t.Parallel()
	specials := []string{`"`, `\\`, `\"`, `\u0041`, `\u00e9`, `\u2028`, "\u2028", "é", "\x01", "\x7f", "\xff", `\n`, `\/`, `\q`, "<", "&"}
	for n := range 34 {
		for at := 0; at <= n; at++ {
			for _, sp := range specials {
				s := strings.Repeat("x", at) + sp + strings.Repeat("y", n-at)
				check(t, []byte(`"`+s+`"`))
				check(t, []byte(`{"k":"`+s+`","a":["`+s+`"]}`))
				check(t, []byte(`"`+s)) // no closing quote
			}
		}
	}
}

// benchSpec is an api spec of the benchmarks' size (about 600 bytes, most
// of it in descriptions), canonical and in jsonb's form.
func benchSpec() (canonical, spaced []byte) {
	var scopes, spacedScopes []string
	for i := range 4 {
		d := fmt.Sprintf("Scope %d of api-00001. %s", i, strings.Repeat("It lets a client read the catalogue. ", 3)[:90])
		scopes = append(scopes, fmt.Sprintf(`{"description":%q,"value":"items-%02d:read"}`, d, i))
		spacedScopes = append(spacedScopes, fmt.Sprintf(`{"value": "items-%02d:read", "description": %q}`, i, d))
	}
	canonical = []byte(`{"display_name":"Bench API api-00001","identifier":"https://api.bench.example/api-00001","scopes":[` +
		strings.Join(scopes, ",") + `],"token_lifetime_seconds":3600}`)
	spaced = []byte(`{"scopes": [` + strings.Join(spacedScopes, ", ") + `], "identifier": "https://api.bench.example/api-00001", ` +
		`"display_name": "Bench API api-00001", "token_lifetime_seconds": 3600}`)
	return canonical, spaced
}

func BenchmarkAppend(b *testing.B) {
	_, spaced := benchSpec()
	buf := make([]byte, 0, 1024)
	for b.Loop() {
		buf, _ = Append(buf[:0], spaced)
	}
}

func BenchmarkPrefixLen(b *testing.B) {
	canonical, _ := benchSpec()
	if PrefixLen(canonical) != len(canonical) {
		b.Fatal("not canonical")
	}
	for b.Loop() {
		_ = PrefixLen(canonical)
	}
}
