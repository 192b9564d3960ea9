package config

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/keenauth/configplans/canonjson"
	"github.com/keenauth/configplans/parallel"
)

// Entry is one resource of a document. Spec is the normalised canonical JSON
// of the spec (object keys sorted, defaults filled), or nil when the document
// maps the key to null (a deletion).
type Entry struct {
	Kind Kind
	Key  string
	Spec json.RawMessage
}

// Document is a decoded configuration document.
type Document struct {
	Types   []Kind           // the planned types (top-level keys), in write order
	Entries map[Kind][]Entry // per kind, sorted by key
}

// DecodeDocument strictly decodes the config member of a request; base is
// the pointer of that member in the request body ("/config").
//
// A 400-class problem gives err, an *Error whose code is malformed_request
// (not JSON, not an object, a value of the wrong JSON type, a duplicate
// object key) or, when there is no such problem, unknown_field (an unknown
// document key, an unknown member anywhere inside a spec). It lists every
// such problem.
//
// Otherwise problems lists every 422-class problem: rule violations inside
// specs, invalid keys, a singleton mapped to null (not_deletable), an empty
// document (empty, at base), and a unique value (connection or role
// display_name, api identifier) repeated by resources of the document
// (duplicate, at the member of each resource after the first in key order).
// References are not checked here. When problems is not empty, the Spec of
// an invalid entry holds a best-effort normalisation, so that references to
// it still resolve; it must not be stored.
//
// Singletons map directly to their spec (their key is "default"); the other
// types map keys to specs or to null. JSON null is accepted only there and
// for a connection's oidc member.
func DecodeDocument(raw json.RawMessage, base string) (doc *Document, problems []FieldError, err error) {
	i := canonjson.SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, nil, notADocument(raw, base)
	}
	// The document is read one resource at a time: only the parsed tree
	// of the spec being read is held, never the tree of the whole
	// document (several times its JSON; a plan's is up to 10 MiB).
	d := &docDecoder{p: strictParser{raw: raw, base: base}, base: base, planned: map[Kind]bool{},
		entries: map[Kind][]Entry{}, pointers: map[Kind]map[string]string{}}
	end, err := d.p.members(i, func(docKey string, i int, dup bool) (int, error) {
		if dup {
			_, end, err := d.p.value(i, 1) // its problems are its own repeats
			return end, err
		}
		return d.docMember(docKey, i)
	})
	if err == nil && canonjson.SkipSpace(raw, end) != len(raw) {
		err = errNotJSON
	}
	if err != nil {
		return nil, nil, badRequest(syntaxProblem(base, err))
	}
	if bad := append(d.p.dups, d.bad...); len(bad) > 0 {
		return nil, nil, badRequest(bad)
	}
	if d.err != nil {
		return nil, nil, d.err
	}
	if err := d.decodeSpecs(); err != nil {
		return nil, nil, err
	}
	problems = d.problems
	if d.docKeys == 0 {
		problems = append(problems, FieldError{Pointer: base, Code: CodeEmpty,
			Detail: "The configuration document has no type to plan."})
	}
	doc = &Document{Entries: map[Kind][]Entry{}}
	for _, info := range Kinds {
		if d.planned[info.Kind] {
			doc.Types = append(doc.Types, info.Kind)
			doc.Entries[info.Kind] = d.entries[info.Kind]
			if doc.Entries[info.Kind] == nil {
				doc.Entries[info.Kind] = []Entry{}
			}
		}
	}
	for k := range doc.Entries {
		slices.SortFunc(doc.Entries[k], func(a, b Entry) int { return strings.Compare(a.Key, b.Key) })
	}
	problems = append(problems, d.specProblems...)
	return doc, append(problems, duplicateValueProblems(doc, d.pointers)...), nil
}

// notADocument is the 400-class error of a config member that is not an
// object: its syntax error, or its repeated members and its type.
func notADocument(raw []byte, base string) error {
	_, bad, ok := parseStrict(raw, base)
	if !ok {
		return badRequest(bad)
	}
	return badRequest(append(bad, FieldError{Pointer: base, Code: CodeMalformedRequest,
		Detail: "The configuration document must be a JSON object."}))
}

// docDecoder reads a document's resources as it parses them, in the order
// of the document.
type docDecoder struct {
	p       strictParser
	base    string
	docKeys int // the document's members, each once
	planned map[Kind]bool
	// bad are the 400-class problems other than repeated members (which
	// the parser gathers, and which are listed first); problems the
	// others of the document's keys, specProblems those of its specs.
	bad, problems, specProblems []FieldError
	entries                     map[Kind][]Entry
	pointers                    map[Kind]map[string]string
	// specs are the specs to decode into their entries once the whole
	// document is read without a 400-class problem (decodeSpecs).
	specs []pendingSpec
	// err is the first failure to re-encode a checked spec's tree: it is
	// returned only when the document has no 400-class problem.
	err error
}

// pendingSpec is a spec whose shape is checked, to decode into the entry
// entries[kind][entry].
type pendingSpec struct {
	kind  Kind
	entry int
	ptr   string
	raw   []byte // its text in the document
}

// docMember reads the value of the document member docKey at raw[i].
func (d *docDecoder) docMember(docKey string, i int) (int, error) {
	d.docKeys++
	raw := d.p.raw
	ptr := d.base + "/" + EscapeToken(docKey)
	info, known := LookupDocKey(docKey)
	if !known {
		d.bad = append(d.bad, FieldError{Pointer: ptr, Code: CodeUnknownField,
			Detail: "This is not a document key of the configuration."})
		_, end, err := d.p.value(i, 1)
		return end, err
	}
	if info.Singleton {
		v, end, err := d.p.value(i, 1)
		if err != nil {
			return 0, err
		}
		switch v := v.(type) {
		case nil:
			d.planned[info.Kind] = true
			d.problems = append(d.problems, FieldError{Pointer: ptr, Code: CodeNotDeletable,
				Detail: fmt.Sprintf("The %s singleton cannot be deleted.", info.Kind)})
		case *jsonObject:
			d.planned[info.Kind] = true
			d.resource(info.Kind, SingletonKey, ptr, v)
		default:
			d.bad = append(d.bad, wrongType(ptr, "an object"))
		}
		return end, nil
	}
	if i >= len(raw) || raw[i] != '{' {
		_, end, err := d.p.value(i, 1)
		if err == nil {
			d.bad = append(d.bad, wrongType(ptr, "an object mapping keys to specs"))
		}
		return end, err
	}
	d.planned[info.Kind] = true
	return d.p.members(i, func(key string, i int, dup bool) (int, error) {
		v, end, err := d.p.value(i, 2)
		if err != nil || dup {
			return end, err
		}
		kptr := ptr + "/" + EscapeToken(key)
		if !keyPattern.MatchString(key) {
			d.problems = append(d.problems, FieldError{Pointer: kptr, Code: CodeInvalid,
				Detail: "A key must be 1 to 63 lowercase letters, digits or hyphens, starting with a letter or digit."})
		}
		switch v := v.(type) {
		case nil:
			d.resource(info.Kind, key, kptr, nil)
		case *jsonObject:
			d.resource(info.Kind, key, kptr, v)
		default:
			d.bad = append(d.bad, wrongType(kptr, "an object or null"))
		}
		return end, nil
	})
}

// resource checks the shape of one resource's spec (nil: a deletion) and,
// while the document has no 400-class problem, decodes it into its entry,
// so that the spec's parsed tree is let go at once.
func (d *docDecoder) resource(kind Kind, key, ptr string, tree *jsonObject) {
	if tree != nil {
		s, _ := newSpec(kind)
		d.bad = append(d.bad, checkShape(tree, specType(s), ptr, nil)...)
	}
	if d.pointers[kind] == nil {
		d.pointers[kind] = map[string]string{}
	}
	d.pointers[kind][key] = ptr
	if len(d.p.dups) > 0 || len(d.bad) > 0 || d.err != nil {
		return // the document is answered by its 400-class problems
	}
	if tree != nil {
		raw, err := specText(tree)
		if err != nil {
			d.err = err
			return
		}
		d.specs = append(d.specs, pendingSpec{kind: kind, entry: len(d.entries[kind]), ptr: ptr, raw: raw})
	}
	d.entries[kind] = append(d.entries[kind], Entry{Kind: kind, Key: key})
}

// specsPerWorker is the fewest specs for which decodeSpecs takes one more
// goroutine: a spec of a few hundred bytes takes about 10 µs to decode,
// check and encode.
const specsPerWorker = 64

// decodeSpecs decodes the specs of a document read without a 400-class
// problem into their entries, checks them (their 422-class problems go to
// specProblems, in the document's order) and encodes them canonically.
// Each spec is decoded from its own text, independently of the others: a
// large document's are shared among up to GOMAXPROCS goroutines, so that
// the plan of 1,000 resources (about 10 ms of this work) waits for it on
// every core the process has. The first failure, in the document's order,
// is returned.
func (d *docDecoder) decodeSpecs() error {
	type decoded struct {
		spec     json.RawMessage
		problems []FieldError
		err      error
	}
	out := make([]decoded, len(d.specs))
	decode := func(i int) {
		ps := d.specs[i]
		s, _ := newSpec(ps.kind)
		if out[i].err = unmarshalSpec(ps.raw, s); out[i].err != nil {
			return
		}
		out[i].spec, out[i].problems = checkSpec(s, ps.ptr)
	}
	parallel.Each(len(d.specs), parallel.Workers(len(d.specs), specsPerWorker), decode)
	for i, ps := range d.specs {
		if out[i].err != nil {
			return out[i].err
		}
		d.entries[ps.kind][ps.entry].Spec = out[i].spec
		d.specProblems = append(d.specProblems, out[i].problems...)
	}
	d.specs = nil
	return nil
}

// duplicateValueProblems reports every resource whose unique value an
// earlier resource of the same kind (in key order) already holds, as
// UniqueValue.Key compares them (a display name folded).
func duplicateValueProblems(doc *Document, pointers map[Kind]map[string]string) []FieldError {
	var out []FieldError
	for _, kind := range doc.Types {
		holders := map[UniqueKey]string{}
		for _, e := range doc.Entries[kind] {
			for _, uv := range UniqueValues(kind, e.Spec) {
				first, taken := holders[uv.Compared()]
				if !taken {
					holders[uv.Compared()] = e.Key
					continue
				}
				out = append(out, FieldError{
					Pointer: pointers[kind][e.Key] + "/" + PointerEscape(uv.Field),
					Code:    CodeDuplicate,
					Detail:  fmt.Sprintf("The %s %q of this document has the same %s.", kind, first, uv.Field),
				})
			}
		}
	}
	return out
}

// badRequest is the error of 400-class problems: malformed_request when one
// of them is, unknown_field otherwise.
func badRequest(bad []FieldError) *Error {
	code := CodeUnknownField
	for _, p := range bad {
		if p.Code == CodeMalformedRequest {
			code = CodeMalformedRequest
			break
		}
	}
	return Problems(code, bad)
}

// EscapeToken is PointerEscape without its cost for the usual token, which
// needs no escaping.
func EscapeToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return PointerEscape(s)
}

func wrongType(ptr, want string) FieldError {
	return FieldError{Pointer: ptr, Code: CodeMalformedRequest, Detail: "The value must be " + want + "."}
}

// jsonObject is a decoded JSON object that remembers the order of its
// members, so that problems are reported in the order of the document.
type jsonObject struct {
	keys []string
	vals map[string]any
	// raw is the object's text in the parsed input: a document that
	// passed its strict checks (no repeated member, exact names) decodes
	// from it into the same typed spec as from its members re-encoded.
	raw []byte
}

func (o *jsonObject) MarshalJSON() ([]byte, error) { return json.Marshal(o.vals) }

// maxDepth bounds the nesting of decoded JSON; specs nest a few levels only.
const maxDepth = 64

// parseStrict decodes JSON into *jsonObject, []any, string, json.Number,
// bool and nil values, reporting every duplicate object key (the first
// occurrence is kept). A syntax error is reported alone, at base, with ok
// false. It reads the bytes by canonjson's scanner, which accepts exactly
// what encoding/json accepts (parseStrictByTokens, the encoding/json
// Decoder's tokens, is the reference it is tested against).
func parseStrict(raw []byte, base string) (v any, problems []FieldError, ok bool) {
	p := &strictParser{raw: raw, base: base}
	v, i, err := p.value(canonjson.SkipSpace(raw, 0), 0)
	if err == nil && canonjson.SkipSpace(raw, i) != len(raw) {
		err = errNotJSON
	}
	if err != nil {
		return nil, syntaxProblem(base, err), false
	}
	return v, p.dups, true
}

// syntaxProblem is the one problem of JSON that cannot be read, at base.
func syntaxProblem(base string, err error) []FieldError {
	detail := "The value is not valid JSON."
	if errors.Is(err, errTooDeep) {
		detail = "The value is nested too deeply."
	}
	return []FieldError{{Pointer: base, Code: CodeMalformedRequest, Detail: detail}}
}

var (
	errTooDeep = errors.New("nested too deeply")
	errNotJSON = errors.New("not valid JSON")
)

type strictParser struct {
	raw  []byte // the input
	base string
	path []string // the member names and indexes down to the current value
	dups []FieldError
}

// value reads the value at raw[i] (no space before it) and returns it with
// the index after it.
func (p *strictParser) value(i, depth int) (any, int, error) {
	b := p.raw
	if i >= len(b) {
		return nil, 0, errNotJSON
	}
	switch c := b[i]; {
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return nil, 0, errTooDeep
		}
		if c == '[' {
			return p.array(i, depth)
		}
		return p.object(i, depth)
	case c == '"':
		s, end, err := p.str(i)
		return s, end, err
	case c == 't' || c == 'f' || c == 'n':
		end, ok := canonjson.ScanLiteral(b, i)
		if !ok {
			return nil, 0, errNotJSON
		}
		switch b[i] {
		case 't':
			return true, end, nil
		case 'f':
			return false, end, nil
		}
		return nil, end, nil
	default:
		end, ok := canonjson.ScanNumber(b, i)
		if !ok {
			return nil, 0, errNotJSON
		}
		return json.Number(b[i:end]), end, nil
	}
}

func (p *strictParser) str(i int) (string, int, error) {
	end, plain, ok := canonjson.ScanString(p.raw, i)
	if !ok {
		return "", 0, errNotJSON
	}
	if plain {
		return string(p.raw[i+1 : end-1]), end, nil
	}
	s, ok := canonjson.DecodeString(p.raw[i:end])
	if !ok {
		return "", 0, errNotJSON
	}
	return s, end, nil
}

func (p *strictParser) array(i, depth int) (any, int, error) {
	b := p.raw
	list := []any{}
	i = canonjson.SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return list, i + 1, nil
	}
	for {
		p.path = append(p.path, strconv.Itoa(len(list)))
		v, end, err := p.value(i, depth+1)
		p.path = p.path[:len(p.path)-1]
		if err != nil {
			return nil, 0, err
		}
		list = append(list, v)
		i = canonjson.SkipSpace(b, end)
		switch {
		case i < len(b) && b[i] == ',':
			i = canonjson.SkipSpace(b, i+1)
		case i < len(b) && b[i] == ']':
			return list, i + 1, nil
		default:
			return nil, 0, errNotJSON
		}
	}
}

func (p *strictParser) object(start, depth int) (any, int, error) {
	b := p.raw
	obj := &jsonObject{vals: map[string]any{}}
	i := canonjson.SkipSpace(b, start+1)
	if i < len(b) && b[i] == '}' {
		obj.raw = b[start : i+1 : i+1]
		return obj, i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, 0, errNotJSON
		}
		key, end, err := p.str(i)
		if err != nil {
			return nil, 0, err
		}
		if i = canonjson.SkipSpace(b, end); i >= len(b) || b[i] != ':' {
			return nil, 0, errNotJSON
		}
		p.path = append(p.path, key)
		v, end, err := p.value(canonjson.SkipSpace(b, i+1), depth+1)
		if err != nil {
			return nil, 0, err
		}
		if _, dup := obj.vals[key]; dup {
			p.dups = append(p.dups, FieldError{Pointer: p.base + Pointer(p.path...), Code: CodeMalformedRequest,
				Detail: "This member is repeated in its object."})
		} else {
			obj.keys = append(obj.keys, key)
			obj.vals[key] = v
		}
		p.path = p.path[:len(p.path)-1]
		i = canonjson.SkipSpace(b, end)
		switch {
		case i < len(b) && b[i] == ',':
			i = canonjson.SkipSpace(b, i+1)
		case i < len(b) && b[i] == '}':
			obj.raw = b[start : i+1 : i+1]
			return obj, i + 1, nil
		default:
			return nil, 0, errNotJSON
		}
	}
}

// members reads the object at raw[start] (its '{') member by member, as
// object does without keeping the values: each reads the value at raw[i]
// (no space before it), with the member's name on p.path, and returns the
// index after it; dup says an earlier member had the same name (reported
// as object reports it, after the value's own problems). It returns the
// index after the object.
func (p *strictParser) members(start int, each func(name string, i int, dup bool) (int, error)) (int, error) {
	b := p.raw
	seen := map[string]bool{}
	i := canonjson.SkipSpace(b, start+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, errNotJSON
		}
		name, end, err := p.str(i)
		if err != nil {
			return 0, err
		}
		if i = canonjson.SkipSpace(b, end); i >= len(b) || b[i] != ':' {
			return 0, errNotJSON
		}
		p.path = append(p.path, name)
		dup := seen[name]
		if end, err = each(name, canonjson.SkipSpace(b, i+1), dup); err != nil {
			return 0, err
		}
		if dup {
			p.dups = append(p.dups, FieldError{Pointer: p.base + Pointer(p.path...), Code: CodeMalformedRequest,
				Detail: "This member is repeated in its object."})
		}
		seen[name] = true
		p.path = p.path[:len(p.path)-1]
		i = canonjson.SkipSpace(b, end)
		switch {
		case i < len(b) && b[i] == ',':
			i = canonjson.SkipSpace(b, i+1)
		case i < len(b) && b[i] == '}':
			return i + 1, nil
		default:
			return 0, errNotJSON
		}
	}
}

// specText is a checked object's text in the input, its members
// re-encoded when it has none.
func specText(tree *jsonObject) ([]byte, error) {
	if tree.raw != nil {
		return tree.raw, nil
	}
	b, err := json.Marshal(tree)
	if err != nil {
		return nil, fmt.Errorf("plans: re-encode spec: %w", err)
	}
	return b, nil
}

// unmarshalSpec decodes the text of a checked object into a typed spec.
func unmarshalSpec(b []byte, s spec) error {
	if err := json.Unmarshal(b, s); err != nil {
		return fmt.Errorf("plans: decode checked spec: %w", err)
	}
	return nil
}

func specType(s spec) reflect.Type { return reflect.TypeOf(s).Elem() }

// DecodeObject decodes raw, which must be one JSON object of the members of
// *v, into v, as the public endpoints decode their bodies: the body as a
// whole as a plan creation's (not an object, data after it, a repeated
// member), then its members as a document's (every unknown member, names
// matched exactly, never case-insensitively; every value of the wrong JSON
// type). Those problems come back as an *Error, malformed_request or
// unknown_field, with the same pointers.
func DecodeObject[T any](raw []byte, v *T) error {
	var top map[string]json.RawMessage
	if err := StrictObject(raw, &top); err != nil {
		return err
	}
	tree, bad, ok := parseStrict(raw, "")
	if ok {
		if _, isObj := tree.(*jsonObject); !isObj {
			bad = append(bad, wrongType("", "an object"))
		} else {
			bad = append(bad, checkShape(tree, reflect.TypeFor[T](), "", nil)...)
		}
	}
	if len(bad) > 0 {
		return badRequest(bad)
	}
	if err := json.Unmarshal(tree.(*jsonObject).raw, v); err != nil {
		return fmt.Errorf("plans: decode checked %T: %w", v, err)
	}
	return nil
}

var textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()

// checkShape compares a decoded value with the Go type it will be decoded
// into and reports every unknown member (unknown_field) and every value of
// the wrong JSON type (malformed_request). The value is at base followed by
// path; pointers are only built for problems.
func checkShape(v any, t reflect.Type, base string, path []string) []FieldError {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	wrong := func(want string) []FieldError {
		return []FieldError{wrongType(base+Pointer(path...), want)}
	}
	if v == nil {
		return wrong(jsonTypeName(t))
	}
	if reflect.PointerTo(t).Implements(textUnmarshalerType) {
		// A value written as a string in a format of its own (a time).
		str, ok := v.(string)
		if !ok || reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(str)) != nil {
			return wrong(jsonTypeName(t))
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(*jsonObject)
		if !ok {
			return wrong("an object")
		}
		fields := jsonFields(t)
		var out []FieldError
		for _, k := range obj.keys {
			f, known := fields[k]
			switch {
			case !known:
				out = append(out, FieldError{Pointer: base + Pointer(append(path, k)...), Code: CodeUnknownField,
					Detail: "This member is not part of the object."})
			case obj.vals[k] == nil && f.Tag.Get("nullable") == "true":
			default:
				out = append(out, checkShape(obj.vals[k], f.Type, base, append(path, k))...)
			}
		}
		return out
	case reflect.Slice:
		list, ok := v.([]any)
		if !ok {
			return wrong("an array")
		}
		var out []FieldError
		for i, item := range list {
			out = append(out, checkShape(item, t.Elem(), base, append(path, strconv.Itoa(i)))...)
		}
		return out
	case reflect.String:
		if _, ok := v.(string); !ok {
			return wrong("a string")
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return wrong("a boolean")
		}
	case reflect.Int, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			return wrong("an integer")
		}
		if _, err := strconv.ParseInt(n.String(), 10, 64); err != nil {
			return wrong("an integer")
		}
	}
	return nil
}

func jsonTypeName(t reflect.Type) string {
	if t == reflect.TypeFor[time.Time]() {
		return "an RFC 3339 time"
	}
	switch t.Kind() {
	case reflect.Struct:
		return "an object"
	case reflect.Slice:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int64:
		return "an integer"
	}
	return "a value"
}

// fieldsCache holds the result of jsonFields per struct type.
var fieldsCache sync.Map // reflect.Type → map[string]reflect.StructField

// jsonFields maps the JSON member names of a struct to its fields.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	if m, ok := fieldsCache.Load(t); ok {
		return m.(map[string]reflect.StructField)
	}
	out := map[string]reflect.StructField{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f
	}
	fieldsCache.Store(t, out)
	return out
}

// StrictObject decodes a JSON object into its members, answering
// malformed_request otherwise (not an object, data after it).
// A member repeated in the object is malformed too (as in a document), not
// silently replaced by its last occurrence.
//
// The members' values are slices of body, not copies: a plan's body is
// megabytes, and its config is the whole of it.
func StrictObject(body []byte, dst *map[string]json.RawMessage) error {
	notObject := &Error{Code: CodeMalformedRequest, Detail: "the request body must be a JSON object"}
	i := canonjson.SkipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return notObject
	}
	i = canonjson.SkipSpace(body, i+1)
	*dst = map[string]json.RawMessage{}
	var repeated []FieldError
	for first := true; ; first = false {
		if i < len(body) && body[i] == '}' && first {
			break
		}
		if i >= len(body) || body[i] != '"' {
			return notObject
		}
		end, _, ok := canonjson.ScanString(body, i)
		if !ok {
			return notObject
		}
		var key string
		if err := json.Unmarshal(body[i:end], &key); err != nil {
			return notObject
		}
		i = canonjson.SkipSpace(body, end)
		if i >= len(body) || body[i] != ':' {
			return notObject
		}
		i = canonjson.SkipSpace(body, i+1)
		end, ok = canonjson.SkipValue(body, i)
		if !ok || !json.Valid(body[i:end]) {
			return notObject
		}
		value := json.RawMessage(body[i:end:end])
		if _, dup := (*dst)[key]; dup {
			repeated = append(repeated, FieldError{Pointer: Pointer(key), Code: CodeMalformedRequest,
				Detail: "This member is repeated in its object."})
		} else {
			(*dst)[key] = value
		}
		i = canonjson.SkipSpace(body, end)
		if i < len(body) && body[i] == ',' {
			i = canonjson.SkipSpace(body, i+1)
			continue
		}
		if i < len(body) && body[i] == '}' {
			break
		}
		return notObject
	}
	if len(repeated) > 0 {
		return Problems(CodeMalformedRequest, repeated)
	}
	if canonjson.SkipSpace(body, i+1) != len(body) {
		return &Error{Code: CodeMalformedRequest, Detail: "the request body has data after the JSON object"}
	}
	return nil
}
