// Package canonjson reads and writes JSON in the canonical form of the
// service's specs: what encoding/json writes, without HTML escaping, for the
// value decoded (with UseNumber) into an any. That is no spacing, object
// members sorted by name with only the last of a repeated name kept,
// strings escaped exactly as encoding/json escapes them, and numbers as they
// were written. It does by one scan what a decode and an encode do, so that
// specs read back in another form (jsonb's member order and spacing on
// PostgreSQL) are made canonical without building a tree of values.
//
// It is also the one scanner of JSON of the service: the scans that do not
// write (scan.go) skip a value, find an object's member and check a compact
// value for config and plans.
package canonjson

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// maxDepth is the deepest nesting Append and IsCanonical read; deeper
// values are left to encoding/json (ok false).
const maxDepth = 512

// IsCanonical reports whether b is one JSON value in canonical form, with
// nothing before or after it.
func IsCanonical(b []byte) bool {
	end, ok := checkValue(b, 0, 0)
	return ok && end == len(b)
}

// Append appends the canonical form of the JSON value b (surrounded by any
// whitespace) to dst. ok is false, and dst is returned unchanged, when b is
// not one JSON value, or nests deeper than Append reads: encoding/json
// decides those.
func Append(dst, b []byte) (_ []byte, ok bool) {
	var a Appender
	return a.Append(dst, b)
}

// An Appender appends canonical forms as Append does, keeping its scratch
// space (the members of an object, the copy of an object written again
// sorted) from one value to the next: many values, such as the specs of a
// whole kind, are made canonical without allocating for each. Its zero
// value is ready; it is not safe for concurrent use.
type Appender struct {
	members []member
	scratch []byte
}

// Append is Append, with a's scratch space.
func (a *Appender) Append(dst, b []byte) (_ []byte, ok bool) {
	w := writer{src: b, out: dst, members: a.members[:0], scratch: a.scratch[:0]}
	i, ok := w.value(skipSpace(b, 0), 0)
	a.members, a.scratch = w.members[:0], w.scratch[:0]
	if !ok || skipSpace(b, i) != len(b) {
		return dst, false
	}
	return w.out, true
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string the way encoding/json writes it
// without HTML escaping: quote, backslash and control characters escaped
// (\b, \f, \n, \r, \t by name, others as \u00XX), each byte of invalid
// UTF-8 as \ufffd, U+2028 and U+2029 as \u2028 and \u2029.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString reads the string token at b[i] (a '"'); it returns the end of
// the token, whether it is a canonical token and whether its bytes are its
// content as they are (printable ASCII or UTF-8 without '\\', '"', control
// characters, U+2028 and U+2029). ok is false for bytes that end before
// the closing quote or hold a raw control character; other malformed
// escapes are found by the decode of a non-plain token.
func scanString(b []byte, i int) (end int, canonical, plain, ok bool) {
	canonical, plain = true, true
	for i++; i < len(b); {
		// Eight bytes at a time while none needs a look: the
		// descriptions and URLs of the specs are long runs of plain
		// ASCII.
		for i+8 <= len(b) && plainWord(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i == len(b) {
			break
		}
		c := b[i]
		if plainASCII[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			return i + 1, canonical, plain, true
		case c < 0x20:
			return 0, false, false, false
		case c == '\\':
			plain = false
			if i+1 >= len(b) {
				return 0, false, false, false
			}
			switch b[i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return 0, false, false, false
				}
				if !canonicalU(b[i+2 : i+6]) {
					canonical = false
				}
				i += 6
			default:
				canonical = false
				i += 2
			}
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
				canonical, plain = false, false
			}
			i += size
		}
	}
	return 0, false, false, false
}

// plainWord reports whether the eight bytes of x are each printable ASCII
// but '"' and '\\' (or DEL, which a string holds as it is too): none below
// 0x20, none with the high bit, none equal to '"' or '\\'. It is exact
// for that: the tests of a byte below n, (x - n) &^ x & 0x80, and of a
// zero byte, which a borrow can only make too eager above a byte that
// passes, tell of some byte when, and only when, there is one.
func plainWord(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	below := (x - 0x20*ones) &^ x
	quote := x ^ '"'*ones
	backslash := x ^ '\\'*ones
	quote = (quote - ones) &^ quote
	backslash = (backslash - ones) &^ backslash
	return (below|quote|backslash|x)&highs == 0
}

// plainASCII are the bytes a string holds as they are: printable ASCII
// but '"' and '\\'.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// canonicalU reports whether \uXXXX is how encoding/json writes the
// character: a control character without a short escape, U+2028 or U+2029.
func canonicalU(h []byte) bool {
	switch string(h) {
	case "2028", "2029":
		return true
	case "0008", "0009", "000a", "000c", "000d":
		return false
	}
	return h[0] == '0' && h[1] == '0' && (h[2] == '0' || h[2] == '1') && isLowerHex(h[3])
}

func isLowerHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

// decodeString is the content of a string token (encoding/json's reading);
// ok is false for a malformed token.
func decodeString(tok []byte) (string, bool) {
	var s string
	if err := json.Unmarshal(tok, &s); err != nil {
		return "", false
	}
	return s, true
}

// scanNumber reads a JSON number at b[i].
func scanNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return 0, false
		}
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return 0, false
		}
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
	}
	return i, true
}

func scanLiteral(b []byte, i int) (int, bool) {
	for _, lit := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(b[i:], []byte(lit)) {
			return i + len(lit), true
		}
	}
	return 0, false
}

// checkValue reads a canonical value at b[i]; ok is false for anything
// else.
func checkValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) || depth > maxDepth {
		return 0, false
	}
	switch c := b[i]; {
	case c == '{':
		i++
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		var prev []byte
		prevPlain := true
		for first := true; ; first = false {
			if i >= len(b) || b[i] != '"' {
				return 0, false
			}
			end, canonical, plain, ok := scanString(b, i)
			if !ok || !canonical {
				return 0, false
			}
			key := b[i+1 : end-1]
			if !first && !keyAfter(prev, prevPlain, key, plain) {
				return 0, false
			}
			prev, prevPlain = key, plain
			if end >= len(b) || b[end] != ':' {
				return 0, false
			}
			if i, ok = checkValue(b, end+1, depth+1); !ok || i >= len(b) {
				return 0, false
			}
			if b[i] == '}' {
				return i + 1, true
			}
			if b[i] != ',' {
				return 0, false
			}
			i++
		}
	case c == '[':
		i++
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = checkValue(b, i, depth+1); !ok || i >= len(b) {
				return 0, false
			}
			if b[i] == ']' {
				return i + 1, true
			}
			if b[i] != ',' {
				return 0, false
			}
			i++
		}
	case c == '"':
		end, canonical, plain, ok := scanString(b, i)
		if !ok || !canonical {
			return 0, false
		}
		if !plain {
			// A canonical escape that is not a well-formed one cannot
			// occur; the decode makes sure of what the scan let through.
			if _, ok := decodeString(b[i:end]); !ok {
				return 0, false
			}
		}
		return end, true
	case c == '-' || c >= '0' && c <= '9':
		return scanNumber(b, i)
	default:
		return scanLiteral(b, i)
	}
}

// keyAfter reports whether the key whose token content is key sorts
// strictly after prev; a content with escapes is compared decoded.
func keyAfter(prev []byte, prevPlain bool, key []byte, plain bool) bool {
	if prevPlain && plain {
		return bytes.Compare(prev, key) < 0
	}
	p, ok1 := decodeString(quoted(prev))
	k, ok2 := decodeString(quoted(key))
	return ok1 && ok2 && p < k
}

func quoted(content []byte) []byte {
	q := make([]byte, 0, len(content)+2)
	q = append(q, '"')
	q = append(q, content...)
	return append(q, '"')
}

// writer appends the canonical form of src to out.
type writer struct {
	src     []byte
	out     []byte
	members []member // scratch, reused by every object
	scratch []byte
}

// member is an object member written to out[start:end] ("name":value),
// with its name for sorting.
type member struct {
	name       []byte
	start, end int
}

func (w *writer) value(i, depth int) (int, bool) {
	b := w.src
	if i >= len(b) || depth > maxDepth {
		return 0, false
	}
	switch c := b[i]; {
	case c == '{':
		return w.object(i, depth)
	case c == '[':
		w.out = append(w.out, '[')
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			w.out = append(w.out, ']')
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = w.value(i, depth+1); !ok {
				return 0, false
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return 0, false
			}
			if b[i] == ']' {
				w.out = append(w.out, ']')
				return i + 1, true
			}
			if b[i] != ',' {
				return 0, false
			}
			w.out = append(w.out, ',')
			i = skipSpace(b, i+1)
		}
	case c == '"':
		end, _, ok := w.str(i)
		return end, ok
	case c == '-' || c >= '0' && c <= '9':
		end, ok := scanNumber(b, i)
		if ok {
			w.out = append(w.out, b[i:end]...)
		}
		return end, ok
	default:
		end, ok := scanLiteral(b, i)
		if ok {
			w.out = append(w.out, b[i:end]...)
		}
		return end, ok
	}
}

// str writes the string token at src[i] canonically and returns its
// content (a slice of src when it holds no escapes).
func (w *writer) str(i int) (end int, content []byte, ok bool) {
	end, _, plain, ok := scanString(w.src, i)
	if !ok {
		return 0, nil, false
	}
	if plain {
		w.out = append(w.out, w.src[i:end]...)
		return end, w.src[i+1 : end-1], true
	}
	s, ok := decodeString(w.src[i:end])
	if !ok {
		return 0, nil, false
	}
	w.out = AppendString(w.out, s)
	return end, []byte(s), true
}

func (w *writer) object(i, depth int) (int, bool) {
	b := w.src
	objStart := len(w.out)
	w.out = append(w.out, '{')
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		w.out = append(w.out, '}')
		return i + 1, true
	}
	base := len(w.members)
	defer func() { w.members = w.members[:base] }()
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, false
		}
		start := len(w.out)
		end, name, ok := w.str(i)
		if !ok {
			return 0, false
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return 0, false
		}
		w.out = append(w.out, ':')
		if i, ok = w.value(skipSpace(b, i+1), depth+1); !ok {
			return 0, false
		}
		w.members = append(w.members, member{name: name, start: start, end: len(w.out)})
		i = skipSpace(b, i)
		if i >= len(b) {
			return 0, false
		}
		if b[i] == '}' {
			i++
			break
		}
		if b[i] != ',' {
			return 0, false
		}
		w.out = append(w.out, ',')
		i = skipSpace(b, i+1)
	}
	ms := w.members[base:]
	sorted := true
	for k := 1; k < len(ms); k++ {
		if bytes.Compare(ms[k-1].name, ms[k].name) >= 0 {
			sorted = false
			break
		}
	}
	if sorted {
		w.out = append(w.out, '}')
		return i, true
	}
	// Members out of order (or a name repeated): write them again sorted,
	// the last of a repeated name kept, from a copy of what was written.
	slices.SortStableFunc(ms, func(x, y member) int { return bytes.Compare(x.name, y.name) })
	w.scratch = append(w.scratch[:0], w.out[objStart:]...)
	w.out = append(w.out[:objStart], '{')
	for k, m := range ms {
		if k+1 < len(ms) && bytes.Equal(ms[k+1].name, m.name) {
			continue // a later member of the same name wins
		}
		if len(w.out) > objStart+1 {
			w.out = append(w.out, ',')
		}
		w.out = append(w.out, w.scratch[m.start-objStart:m.end-objStart]...)
	}
	w.out = append(w.out, '}')
	return i, true
}

// PrefixLen returns the length of the canonical value at the start of b,
// -1 when b does not start with one.
func PrefixLen(b []byte) int {
	end, ok := checkValue(b, 0, 0)
	if !ok {
		return -1
	}
	return end
}

// The scanner's steps, for a parser of the service's own that builds values
// (config's strict document parser, plans' and revisions' readers of their
// stored JSON): each reads one token of valid JSON at
// b[i] and returns where it ends, ok false for anything else.

// SkipSpace returns the first index at or after i that is not JSON
// whitespace.
func SkipSpace(b []byte, i int) int { return skipSpace(b, i) }

// ScanString reads the string token at b[i] (a '"'). plain reports that
// the bytes between its quotes are its content as they are; a token that
// is not plain may still hold a malformed escape, which DecodeString finds.
func ScanString(b []byte, i int) (end int, plain, ok bool) {
	end, _, plain, ok = scanString(b, i)
	return end, plain, ok
}

// DecodeString is the content of a string token, as encoding/json decodes
// it (invalid UTF-8 becomes U+FFFD); ok is false for a malformed escape.
func DecodeString(tok []byte) (string, bool) { return decodeString(tok) }

// ScanNumber reads the number token at b[i].
func ScanNumber(b []byte, i int) (int, bool) { return scanNumber(b, i) }

// ScanLiteral reads true, false or null at b[i].
func ScanLiteral(b []byte, i int) (int, bool) { return scanLiteral(b, i) }

// AppendRaw appends a JSON value held as bytes; none (nil or empty) is
// null, as a nil json.RawMessage is written.
func AppendRaw(b, raw []byte) []byte {
	if len(raw) == 0 {
		return append(b, "null"...)
	}
	return append(b, raw...)
}
