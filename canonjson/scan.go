package canonjson

// The scans of JSON that do not write it: skipping a value by its
// structure (SkipValue), finding an object's member (Member), and checking
// a compact value strictly (CompactEnd, StringEnd). Each keeps the
// behaviour of the scanner it was in before (config's specs and request
// bodies, plans' stored change records), on malformed input too.

import (
	"bytes"
	"encoding/binary"
	"strings"
)

// Member returns the value of the member name of the JSON object raw
// (nil when it has none; the last one when it is repeated, as
// encoding/json does). ok is false when raw is not an object this scan reads:
// not an object, malformed, or with a member name that has escapes (which
// encoding/json would match case-insensitively and unescaped).
func Member(raw []byte, name string) (value []byte, ok bool) {
	folded := false
	ok = Members(raw, func(m Span) bool {
		if key := raw[m.Name[0]:m.Name[1]]; string(key) == name {
			value = raw[m.Value[0]:m.Value[1]]
		} else if strings.EqualFold(string(key), name) {
			folded = true // encoding/json's case-insensitive match
			return false
		}
		return true
	})
	if !ok || folded {
		return nil, false
	}
	return value, true
}

// Span locates a member of an object in its text: its name (between its
// quotes) is raw[Name[0]:Name[1]], its value raw[Value[0]:Value[1]].
type Span struct {
	Name, Value [2]int
}

// Members calls member for each member of the JSON object raw, in order,
// until member returns false; ok is false when raw is not an object this
// scan reads (then, or after a false, member may have been called for some
// of its members), where Member's would be for any name. Several members
// can so be found in one scan.
func Members(raw []byte, member func(m Span) bool) (ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return skipSpace(raw, i+1) == len(raw)
	}
	for {
		if i >= len(raw) || raw[i] != '"' {
			return false
		}
		end := i + 1
		for end < len(raw) && raw[end] != '"' {
			if raw[end] == '\\' {
				return false
			}
			end++
		}
		if end >= len(raw) {
			return false
		}
		name := [2]int{i + 1, end}
		i = skipSpace(raw, end+1)
		if i >= len(raw) || raw[i] != ':' {
			return false
		}
		i = skipSpace(raw, i+1)
		vEnd, valid := SkipValue(raw, i)
		if !valid {
			return false
		}
		if !member(Span{Name: name, Value: [2]int{i, vEnd}}) {
			return true
		}
		i = skipSpace(raw, vEnd)
		if i >= len(raw) {
			return false
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case '}':
			return skipSpace(raw, i+1) == len(raw)
		default:
			return false
		}
	}
}

// SkipValue returns the end of the JSON value at b[i:]: strings skipped
// with their escapes, objects and arrays by depth, scalars up to the next
// delimiter. It checks the structure, not every scalar: a value it ends
// is then decoded by encoding/json, which refuses a malformed one.
func SkipValue(b []byte, i int) (int, bool) {
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			end, ok := skipString(b, i+1)
			if !ok {
				return 0, false
			}
			i = end
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
			if j := skipSpace(b, i); j < len(b) && (b[j] == ',' || b[j] == '}' || b[j] == ']') {
				return i, true
			}
		}
	}
	return i, depth == 0
}

// SkipString returns the end of the string whose opening quote is b[i]
// (the index after its closing quote), finding the quotes and backslashes
// as skipString does; ok is false when the string does not end.
func SkipString(b []byte, i int) (int, bool) {
	return skipString(b, i+1)
}

// skipString returns the end of the string whose content starts at b[i:]
// (after its closing quote): the first quote that no backslash escapes,
// any other byte taken as it is. Most of a spec is the text of its
// strings, so the quote and the backslashes are found by bytes.IndexByte,
// many bytes at a time, not byte by byte (which is slower even for the
// short strings of member names: measured on P1's specs).
func skipString(b []byte, i int) (int, bool) {
	for {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return 0, false
		}
		q += i
		for {
			bs := bytes.IndexByte(b[i:q], '\\')
			if bs < 0 {
				return q + 1, true
			}
			// The backslash escapes the byte after it, which may be
			// the quote at q: then the search goes on after it.
			if i += bs + 2; i > q {
				break
			}
		}
	}
}

// maxCompactDepth bounds the nesting CompactEnd reads; a deeper value is
// left to encoding/json (whose own limit is 10,000).
const maxCompactDepth = 512

// CompactEnd checks the JSON value at b[i], which has no spaces in it, and
// returns the index after it; ok is false for anything else, and for a
// value nested deeper than 512. It is strict where the scans of Append are
// lenient (every escape is checked), and takes any byte from 0x20 on in a
// string, valid UTF-8 or not, as encoding/json does.
func CompactEnd(b []byte, i int) (end int, ok bool) {
	d := compact{src: b, i: i}
	if !d.value(0) {
		return 0, false
	}
	return d.i, true
}

// StringEnd checks the string token at b[i] (a '"') as CompactEnd does,
// and returns the index after its closing quote.
func StringEnd(b []byte, i int) (end int, ok bool) {
	d := compact{src: b, i: i}
	return d.stringEnd()
}

// compact reads src from i for CompactEnd.
type compact struct {
	src []byte
	i   int
}

func (d *compact) literal(lit string) bool {
	if len(d.src)-d.i >= len(lit) && string(d.src[d.i:d.i+len(lit)]) == lit {
		d.i += len(lit)
		return true
	}
	return false
}

// value checks one JSON value with no spaces in it.
func (d *compact) value(depth int) bool {
	if d.i >= len(d.src) {
		return false
	}
	switch c := d.src[d.i]; {
	case c == '"':
		end, ok := d.stringEnd()
		d.i = end
		return ok
	case c == '{':
		return depth < maxCompactDepth && d.object(depth)
	case c == '[':
		return depth < maxCompactDepth && d.array(depth)
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	default:
		return d.number()
	}
}

// object checks the object that starts at d.i, at depth.
func (d *compact) object(depth int) bool {
	d.i++
	if d.i < len(d.src) && d.src[d.i] == '}' {
		d.i++
		return true
	}
	for {
		if d.i >= len(d.src) || d.src[d.i] != '"' {
			return false
		}
		end, ok := d.stringEnd()
		if !ok {
			return false
		}
		d.i = end
		if d.i >= len(d.src) || d.src[d.i] != ':' {
			return false
		}
		d.i++
		if !d.value(depth + 1) {
			return false
		}
		if d.i >= len(d.src) {
			return false
		}
		switch d.src[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return true
		default:
			return false
		}
	}
}

// array checks the array that starts at d.i, at depth.
func (d *compact) array(depth int) bool {
	d.i++
	if d.i < len(d.src) && d.src[d.i] == ']' {
		d.i++
		return true
	}
	for {
		if !d.value(depth + 1) {
			return false
		}
		if d.i >= len(d.src) {
			return false
		}
		switch d.src[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return true
		default:
			return false
		}
	}
}

// stringEnd checks the string that starts at d.i and returns the index
// after its closing quote. Like encoding/json, it takes any byte from 0x20
// on, valid UTF-8 or not. Most of a spec is the text of its strings: the
// next quote and the next backslash are found by bytes.IndexByte, many
// bytes at a time, and the text before them is checked for control
// characters eight bytes at a time.
func (d *compact) stringEnd() (int, bool) {
	s := d.src
	i := d.i + 1
	for {
		q := bytes.IndexByte(s[i:], '"')
		if q < 0 {
			return 0, false
		}
		q += i
		// The text up to the quote, or up to the first escape before it.
		stop := q
		if bs := bytes.IndexByte(s[i:q], '\\'); bs >= 0 {
			stop = i + bs
		}
		if !noControl(s[i:stop]) {
			return 0, false
		}
		if stop == q {
			return q + 1, true
		}
		i = stop
		if i+1 >= len(s) {
			return 0, false
		}
		switch s[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(s) {
				return 0, false
			}
			for _, h := range s[i+2 : i+6] {
				if !isHex(h) {
					return 0, false
				}
			}
			i += 6
		default:
			return 0, false
		}
	}
}

// noControl tells whether no byte of b is below 0x20, eight at a time
// (the test of "Bit Twiddling Hacks" for a byte less than n: exact for
// whether any byte is).
func noControl(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		if (w-0x20*ones)&^w&highs != 0 {
			return false
		}
	}
	for ; i < len(b); i++ {
		if b[i] < 0x20 {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// number reads a number of the JSON grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *compact) number() bool {
	end, ok := scanNumber(d.src, d.i)
	if ok {
		d.i = end
	}
	return ok
}
