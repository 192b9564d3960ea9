package canonjson

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestNoControl(t *testing.T) {
	t.Parallel()
	want := func(b []byte) bool {
		for _, c := range b {
			if c < 0x20 {
				return false
			}
		}
		return true
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, fill := range []byte{'a', ' ', 0x21, 0x7f, 0x80, 0xff, 0x1f, '"'} {
		for n := range 20 {
			for pos := range n {
				for c := range 256 {
					b := bytes.Repeat([]byte{fill}, n)
					b[pos] = byte(c)
					if rng.IntN(2) == 0 {
						b[rng.IntN(n)] = byte(rng.IntN(256))
					}
					if got := noControl(b); got != want(b) {
						t.Fatalf("noControl(%q) = %v", b, got)
					}
				}
			}
		}
	}
}

// Member answers the last of repeated members, nil for an absent one, and
// refuses (ok false) what it does not read: not an object, malformed, a
// name with an escape, or a name that matches only case-insensitively.
// The members Members finds, looked up as guardrails does, answer the same
// for every name, and Members refuses exactly what Member refuses for
// every name.
func TestMembersAnswersAsMemberDoes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		raw, name, want string
		ok              bool
	}{
		{`{"a":1,"b":[1,{"c":2}],"d":"x"}`, "b", `[1,{"c":2}]`, true},
		{`{"a":1,"a":2}`, "a", "2", true},
		{`{"a":1}`, "z", "", true},
		{` { "a" : "v" , "b":null } `, "a", `"v"`, true},
		{`{}`, "a", "", true},
		{`{"A":1,"a":2}`, "a", "", false},
		{`{"a\u0062":1}`, "ab", "", false},
		{`{"a":1,}`, "a", "", false},
		{`{"a":1} x`, "a", "", false},
		{`[1]`, "a", "", false},
		{`{"a":[1}`, "a", "", false},
	} {
		got, ok := Member([]byte(c.raw), c.name)
		if string(got) != c.want || ok != c.ok {
			t.Errorf("Member(%s, %q) = %q, %v; want %q, %v", c.raw, c.name, got, ok, c.want, c.ok)
		}
		var spans []Span
		sok := Members([]byte(c.raw), func(m Span) bool { spans = append(spans, m); return true })
		for _, name := range []string{"a", "A", "b", "ab", "c", "d", "z"} {
			want, wok := Member([]byte(c.raw), name)
			got, gok := []byte(nil), sok
			for _, m := range spans {
				if key := c.raw[m.Name[0]:m.Name[1]]; key == name {
					got = []byte(c.raw[m.Value[0]:m.Value[1]])
				} else if strings.EqualFold(key, name) {
					got, gok = nil, false
					break
				}
			}
			if !sok {
				got = nil
			}
			if string(got) != string(want) || gok != wok {
				t.Errorf("Members(%s) looked up %q = %q, %v; Member: %q, %v", c.raw, name, got, gok, want, wok)
			}
		}
	}
}
