package plans

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/keenauth/configplans/canonjson"
	"github.com/keenauth/configplans/config"
)

// decodeChangeRecords decodes a plan's stored changes as json.Unmarshal
// into a []changeRecord would, in one pass over the bytes: encoding/json
// scans the whole input in checkValid before it decodes, scans every spec
// again to skip it, and copies it. The specs and diff values here are
// slices of src (capacity cut at their end, so that an append copies) and
// are checked as they are read. What the stored records always are, our
// own canonical output, is read here; anything else (a member this does
// not know or holds twice, a key with escapes, a value of another type, a
// raw value with spaces in it, bytes that are not JSON) is left to
// encoding/json, which gives the value or the error it always gave, with
// the raw values compacted: an answer splices them as they are.
func decodeChangeRecords(src []byte) ([]changeRecord, error) {
	d := recordDecoder{src: src}
	if recs, ok := d.records(); ok {
		return recs, nil
	}
	var recs []changeRecord
	if err := json.Unmarshal(src, &recs); err != nil {
		return nil, err
	}
	for i := range recs {
		c := &recs[i].Change
		c.Spec, c.ResourceID = compactRaw(c.Spec), compactRaw(c.ResourceID)
		for j := range c.Diff {
			c.Diff[j].Old, c.Diff[j].Value = compactRaw(c.Diff[j].Old), compactRaw(c.Diff[j].Value)
		}
	}
	return recs, nil
}

// compactRaw is raw without insignificant spaces (a plan stored while
// changes was jsonb has them).
func compactRaw(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return raw
	}
	return buf.Bytes()
}

// recordDecoder reads stored change records; every method returns false
// for what it leaves to encoding/json.
type recordDecoder struct {
	src []byte
	i   int
	// spec is the last spec read: a creation's diff holds it again
	// (add "" of the whole spec), which diffOp then takes without
	// checking it a second time.
	spec json.RawMessage
}

func (d *recordDecoder) space() { d.i = canonjson.SkipSpace(d.src, d.i) }

// peek returns the next byte after spaces, 0 at the end.
func (d *recordDecoder) peek() byte {
	d.space()
	if d.i < len(d.src) {
		return d.src[d.i]
	}
	return 0
}

func (d *recordDecoder) consume(c byte) bool {
	if d.peek() == c {
		d.i++
		return true
	}
	return false
}

func (d *recordDecoder) literal(lit string) bool {
	if len(d.src)-d.i >= len(lit) && string(d.src[d.i:d.i+len(lit)]) == lit {
		d.i += len(lit)
		return true
	}
	return false
}

func (d *recordDecoder) records() ([]changeRecord, bool) {
	var recs []changeRecord
	if d.peek() == 'n' {
		if !d.literal("null") {
			return nil, false
		}
	} else {
		more, ok := d.arrayStart()
		if !ok {
			return nil, false
		}
		// One record for each "kind" member of the text (most are
		// records', a spec's few ones cost a record's place): growing the
		// records as they come copied them at every doubling.
		recs = make([]changeRecord, 0, bytes.Count(d.src[d.i:], []byte(`{"kind":`)))
		for more {
			recs = append(recs, changeRecord{})
			if !d.record(&recs[len(recs)-1]) {
				return nil, false
			}
			if more, ok = d.arrayNext(); !ok {
				return nil, false
			}
		}
	}
	return recs, d.peek() == 0 && d.i == len(d.src)
}

// arrayStart reads the [ of an array; more is false for an empty one.
func (d *recordDecoder) arrayStart() (more, ok bool) {
	if !d.consume('[') {
		return false, false
	}
	return !d.consume(']'), true
}

// arrayNext reads what follows an element: more after a comma, not more
// after the closing bracket.
func (d *recordDecoder) arrayNext() (more, ok bool) {
	switch d.peek() {
	case ',':
		d.i++
		return true, true
	case ']':
		d.i++
		return false, true
	}
	return false, false
}

// objectStart reads the { of an object; more is false for an empty one.
func (d *recordDecoder) objectStart() (more, ok bool) {
	if !d.consume('{') {
		return false, false
	}
	return !d.consume('}'), true
}

// objectNext reads what follows a member, as arrayNext.
func (d *recordDecoder) objectNext() (more, ok bool) {
	switch d.peek() {
	case ',':
		d.i++
		return true, true
	case '}':
		d.i++
		return false, true
	}
	return false, false
}

// key reads a member's key and its colon. A key with escapes or non-ASCII
// bytes is left to encoding/json, which also matches keys
// case-insensitively.
func (d *recordDecoder) key() ([]byte, bool) {
	if !d.consume('"') {
		return nil, false
	}
	start := d.i
	for d.i < len(d.src) && d.src[d.i] != '"' {
		if c := d.src[d.i]; c == '\\' || c < 0x20 || c >= 0x80 {
			return nil, false
		}
		d.i++
	}
	if d.i == len(d.src) {
		return nil, false
	}
	key := d.src[start:d.i]
	d.i++
	if !d.consume(':') {
		return nil, false
	}
	return key, true
}

// seen marks a member read, false for one read before.
func seen(mask *uint16, bit uint16) bool {
	if *mask&bit != 0 {
		return false
	}
	*mask |= bit
	return true
}

func (d *recordDecoder) record(rc *changeRecord) bool {
	if d.peek() == 'n' {
		return d.literal("null")
	}
	more, ok := d.objectStart()
	var mask uint16
	c := &rc.Change
	for ok && more {
		var key []byte
		if key, ok = d.key(); !ok {
			return false
		}
		switch string(key) {
		case "kind":
			s := string(c.Kind)
			ok = seen(&mask, 1<<0) && d.stringInto(&s, internKind)
			c.Kind = config.Kind(s)
		case "key":
			ok = seen(&mask, 1<<1) && d.stringInto(&c.Key, nil)
		case "action":
			ok = seen(&mask, 1<<2) && d.stringInto((*string)(&c.Action), internAction)
		case "base_version":
			ok = seen(&mask, 1<<3) && d.intPtr(&c.BaseVersion)
		case "spec":
			ok = seen(&mask, 1<<4) && d.raw(&c.Spec)
			d.spec = c.Spec
		case "diff":
			ok = seen(&mask, 1<<5) && d.diff(&c.Diff)
		case "requires_secret":
			ok = seen(&mask, 1<<6) && d.boolInto(&c.RequiresSecret)
		case "secret_ref":
			ok = seen(&mask, 1<<7) && d.stringInto(&c.SecretRef, nil)
		case "resource_id":
			ok = seen(&mask, 1<<8) && d.raw(&c.ResourceID)
		case "writes_material":
			ok = seen(&mask, 1<<9) && d.boolInto(&rc.WritesMaterial)
		case "keeps_material":
			ok = seen(&mask, 1<<10) && d.boolInto(&rc.KeepsMaterial)
		default:
			return false
		}
		if ok {
			more, ok = d.objectNext()
		}
	}
	return ok
}

func (d *recordDecoder) diff(ops *[]config.DiffOp) bool {
	if d.peek() == 'n' {
		*ops = nil
		return d.literal("null")
	}
	more, ok := d.arrayStart()
	out := []config.DiffOp{}
	for ok && more {
		out = append(out, config.DiffOp{})
		if ok = d.diffOp(&out[len(out)-1]); ok {
			more, ok = d.arrayNext()
		}
	}
	*ops = out
	return ok
}

func (d *recordDecoder) diffOp(op *config.DiffOp) bool {
	if d.peek() == 'n' {
		return d.literal("null")
	}
	more, ok := d.objectStart()
	var mask uint16
	for ok && more {
		var key []byte
		if key, ok = d.key(); !ok {
			return false
		}
		switch string(key) {
		case "op":
			ok = seen(&mask, 1<<0) && d.stringInto(&op.Op, internOp)
		case "path":
			ok = seen(&mask, 1<<1) && d.stringInto(&op.Path, internPath)
		case "old":
			ok = seen(&mask, 1<<2) && d.raw(&op.Old)
		case "value":
			ok = seen(&mask, 1<<3) && d.rawAgain(&op.Value, d.spec)
		default:
			return false
		}
		if ok {
			more, ok = d.objectNext()
		}
	}
	return ok
}

// The strings most records hold, given without a copy each.
func internKind(b []byte) (string, bool) {
	s, ok := kindNames[string(b)]
	return s, ok
}

var kindNames = map[string]string{}

func init() {
	for _, k := range []config.Kind{config.KindAPI, config.KindConnection, config.KindRole, config.KindApplication, config.KindApplicationBranding, config.KindEnvironmentSettings,
		config.KindIdentitySettings, config.KindAttackProtection, config.KindBranding} {
		kindNames[string(k)] = string(k)
	}
}

func internAction(b []byte) (string, bool) {
	for _, a := range [...]Action{ActionCreate, ActionUpdate, ActionDelete, ActionNoOp} {
		if string(b) == string(a) {
			return string(a), true
		}
	}
	return "", false
}

func internOp(b []byte) (string, bool) {
	switch string(b) {
	case "add":
		return "add", true
	case "remove":
		return "remove", true
	case "replace":
		return "replace", true
	}
	return "", false
}

func internPath(b []byte) (string, bool) { return "", len(b) == 0 }

// stringInto reads a string into dst, or null (dst is left as it is);
// intern, when set, gives a string without copying it.
func (d *recordDecoder) stringInto(dst *string, intern func([]byte) (string, bool)) bool {
	if d.peek() == 'n' {
		return d.literal("null")
	}
	if !d.consume('"') {
		return false
	}
	start := d.i
	for d.i < len(d.src) {
		switch c := d.src[d.i]; {
		case c == '"':
			b := d.src[start:d.i]
			d.i++
			if intern != nil {
				if s, ok := intern(b); ok {
					*dst = s
					return true
				}
			}
			*dst = string(b)
			return true
		case c == '\\' || c >= 0x80:
			// Escapes and UTF-8 (invalid bytes become U+FFFD) as
			// encoding/json reads them.
			end, ok := canonjson.StringEnd(d.src, start-1)
			if !ok {
				return false
			}
			var v string // not dst, which would then escape on every call
			if json.Unmarshal(d.src[start-1:end], &v) != nil {
				return false
			}
			*dst, d.i = v, end
			return true
		case c < 0x20:
			return false
		}
		d.i++
	}
	return false
}

func (d *recordDecoder) boolInto(dst *bool) bool {
	switch d.peek() {
	case 't':
		*dst = true
		return d.literal("true")
	case 'f':
		*dst = false
		return d.literal("false")
	case 'n':
		return d.literal("null")
	}
	return false
}

// intPtr reads an integer or null; a number with a fraction or an exponent
// is left to encoding/json (it refuses it for an int).
func (d *recordDecoder) intPtr(dst **int) bool {
	if d.peek() == 'n' {
		*dst = nil
		return d.literal("null")
	}
	start := d.i
	if !d.number() {
		return false
	}
	n, err := strconv.ParseInt(string(d.src[start:d.i]), 10, 64)
	if err != nil {
		return false
	}
	v := int(n)
	*dst = &v
	return true
}

// raw reads any JSON value into dst as a slice of the source; null is
// json.RawMessage("null"), as encoding/json gives it.
func (d *recordDecoder) raw(dst *json.RawMessage) bool {
	d.space()
	start := d.i
	end, ok := canonjson.CompactEnd(d.src, d.i)
	if !ok {
		return false
	}
	d.i = end
	*dst = d.src[start:d.i:d.i]
	return true
}

// rawAgain is raw for a value that may be the bytes of known, a value
// raw read before: those are taken without checking them again. An object
// or an array ends at its closing bracket, so the same bytes are the same
// value whatever follows them (a number would not be: "1" is a prefix of
// "12").
func (d *recordDecoder) rawAgain(dst *json.RawMessage, known json.RawMessage) bool {
	d.space()
	if len(known) > 0 && (known[0] == '{' || known[0] == '[') && bytes.HasPrefix(d.src[d.i:], known) {
		start := d.i
		d.i += len(known)
		*dst = d.src[start:d.i:d.i]
		return true
	}
	return d.raw(dst)
}

// number reads a number of the JSON grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *recordDecoder) number() bool {
	end, ok := canonjson.ScanNumber(d.src, d.i)
	if ok {
		d.i = end
	}
	return ok
}

// decodeVersions decodes a plan's stored versions, {"kind/key": version,
// …}, as json.Unmarshal into a nil map[string]int would: one entry for
// each resource of the plan, which encoding/json decoded through
// reflection, a key and a map growth at a time. A key with escapes or
// bytes that are not plain, a number that is not a small integer, or
// anything but an object of those is left to encoding/json, which gives
// the value or the error it always gave.
func decodeVersions(src []byte) (map[string]int, error) {
	if m, ok := scanVersions(src); ok {
		return m, nil
	}
	var m map[string]int
	if err := json.Unmarshal(src, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// scanVersions is decodeVersions' one pass; ok is false for what it
// leaves to encoding/json.
func scanVersions(src []byte) (_ map[string]int, ok bool) {
	d := recordDecoder{src: src}
	if d.peek() == 'n' {
		return nil, d.literal("null") && d.peek() == 0 && d.i == len(src)
	}
	more, ok := d.objectStart()
	if !ok {
		return nil, false
	}
	m := make(map[string]int, bytes.Count(src, []byte{':'}))
	for more {
		if d.peek() != '"' {
			return nil, false
		}
		end, plain, ok := canonjson.ScanString(src, d.i)
		if !ok || !plain {
			return nil, false
		}
		key := string(src[d.i+1 : end-1])
		d.i = end
		if !d.consume(':') {
			return nil, false
		}
		v, ok := d.smallInt()
		if !ok {
			return nil, false
		}
		m[key] = v
		if more, ok = d.objectNext(); !ok {
			return nil, false
		}
	}
	return m, d.peek() == 0 && d.i == len(src)
}

// smallInt reads an integer of at most 18 digits (no overflow), without
// a fraction or an exponent.
func (d *recordDecoder) smallInt() (int, bool) {
	d.space()
	start := d.i
	end, ok := canonjson.ScanNumber(d.src, d.i)
	if !ok || end-start > 18 {
		return 0, false
	}
	v, err := strconv.Atoi(string(d.src[start:end]))
	if err != nil {
		return 0, false // a fraction or an exponent
	}
	d.i = end
	return v, true
}
