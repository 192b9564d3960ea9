package config

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// decodeDocumentByTree is DecodeDocument as it was before it read a
// document one resource at a time: it parsed the whole document into one
// tree first. It is the reference the streaming decoder is held to: the
// same document, problems and errors for every input.
func decodeDocumentByTree(raw json.RawMessage, base string) (doc *Document, problems []FieldError, err error) {
	tree, bad, ok := parseStrict(raw, base)
	if !ok {
		return nil, nil, badRequest(bad)
	}
	root, ok := tree.(*jsonObject)
	if !ok {
		return nil, nil, badRequest(append(bad, FieldError{Pointer: base, Code: CodeMalformedRequest,
			Detail: "The configuration document must be a JSON object."}))
	}

	items, planned, problems, more := documentItemsByTree(root, base)
	if bad = append(bad, more...); len(bad) > 0 {
		return nil, nil, badRequest(bad)
	}
	if len(root.keys) == 0 {
		problems = append(problems, FieldError{Pointer: base, Code: CodeEmpty,
			Detail: "The configuration document has no type to plan."})
	}
	doc, specProblems, err := documentOfByTree(items, planned)
	if err != nil {
		return nil, nil, err
	}
	return doc, append(problems, specProblems...), nil
}

// docItem is one resource of a document, located by its pointer.
type treeItem struct {
	kind    Kind
	key     string
	pointer string
	spec    *jsonObject // nil for a deletion
}

// documentItems reads the resources of a parsed document: the kinds it
// plans, its 400-class problems (bad: unknown keys, shapes) and the others.
func documentItemsByTree(root *jsonObject, base string) (items []treeItem, planned map[Kind]bool, problems, bad []FieldError) {
	planned = map[Kind]bool{}
	for _, docKey := range root.keys {
		ptr := base + "/" + EscapeToken(docKey)
		info, known := LookupDocKey(docKey)
		if !known {
			bad = append(bad, FieldError{Pointer: ptr, Code: CodeUnknownField,
				Detail: "This is not a document key of the configuration."})
			continue
		}
		value := root.vals[docKey]
		if info.Singleton {
			switch v := value.(type) {
			case nil:
				planned[info.Kind] = true
				problems = append(problems, FieldError{Pointer: ptr, Code: CodeNotDeletable,
					Detail: fmt.Sprintf("The %s singleton cannot be deleted.", info.Kind)})
			case *jsonObject:
				planned[info.Kind] = true
				s, _ := newSpec(info.Kind)
				bad = append(bad, checkShape(v, specType(s), ptr, nil)...)
				items = append(items, treeItem{info.Kind, SingletonKey, ptr, v})
			default:
				bad = append(bad, wrongType(ptr, "an object"))
			}
			continue
		}
		byKey, isObj := value.(*jsonObject)
		if !isObj {
			bad = append(bad, wrongType(ptr, "an object mapping keys to specs"))
			continue
		}
		planned[info.Kind] = true
		for _, key := range byKey.keys {
			kptr := ptr + "/" + EscapeToken(key)
			if !keyPattern.MatchString(key) {
				problems = append(problems, FieldError{Pointer: kptr, Code: CodeInvalid,
					Detail: "A key must be 1 to 63 lowercase letters, digits or hyphens, starting with a letter or digit."})
			}
			switch v := byKey.vals[key].(type) {
			case nil:
				items = append(items, treeItem{info.Kind, key, kptr, nil})
			case *jsonObject:
				s, _ := newSpec(info.Kind)
				bad = append(bad, checkShape(v, specType(s), kptr, nil)...)
				items = append(items, treeItem{info.Kind, key, kptr, v})
			default:
				bad = append(bad, wrongType(kptr, "an object or null"))
			}
		}
	}
	return items, planned, problems, bad
}

// documentOf builds the document of well-shaped items, with the problems
// of their specs and the unique values they repeat.
func documentOfByTree(items []treeItem, planned map[Kind]bool) (*Document, []FieldError, error) {
	var problems []FieldError
	doc := &Document{Entries: map[Kind][]Entry{}}
	for _, info := range Kinds {
		if planned[info.Kind] {
			doc.Types = append(doc.Types, info.Kind)
			doc.Entries[info.Kind] = []Entry{}
		}
	}
	pointers := map[Kind]map[string]string{}
	for i := range items {
		it := items[i]
		// The parsed tree of a spec is several times its JSON: each is
		// let go once its typed spec is decoded, not at the end.
		items[i].spec = nil
		e := Entry{Kind: it.kind, Key: it.key}
		if it.spec != nil {
			s, _ := newSpec(it.kind)
			if err := unmarshalTree(it.spec, s); err != nil {
				return nil, nil, err
			}
			var specProblems []FieldError
			e.Spec, specProblems = checkSpec(s, it.pointer)
			problems = append(problems, specProblems...)
		}
		doc.Entries[it.kind] = append(doc.Entries[it.kind], e)
		if pointers[it.kind] == nil {
			pointers[it.kind] = map[string]string{}
		}
		pointers[it.kind][it.key] = it.pointer
	}
	for k := range doc.Entries {
		slices.SortFunc(doc.Entries[k], func(a, b Entry) int { return strings.Compare(a.Key, b.Key) })
	}
	return doc, append(problems, duplicateValueProblems(doc, pointers)...), nil
}

func decodeDocumentSeeds() []string {
	role := func(name string) string { return `{"display_name": "` + name + `"}` }
	return []string{
		exampleDocument, `{}`, `[]`, `null`, ` {"roles": {"a": null}} `, `{"branding": null}`, `{"roles": {"a": null}} x`,
		`{"connections": {"e": {"type": "enterprise", "display_name": "E", "active": false, "oidc": null}}}`,
		`{"roles": {"a": {"display_name": "x", "display_name": "y"}}}`,
		`{"roles": {"a": {"display_name": "x"}, "a": {"display_name": "y", "display_name": "z"}}, "roles": {"b": null, "b": 1}}`,
		`[{"a": 1, "a": 2}]`, `{"apis": [], "nope": {"x": 1, "x": 2}, "roles": 3, "branding": [], "identity_settings": "x"}`,
		`{"roles": {"Bad_Key": 1, "a/b": null, "c": {"display_name": 5, "extra": true}}, "branding": {"primary_color": "#fff", "x": 1}}`,
		`{"roles": {"a": ` + role("A") + `, "b": ` + role("A") + `, "c~d": ` + role("") + `}}`,
		`{"roles": {"a": {"display_name": ` + strings.Repeat("[", 80) + strings.Repeat("]", 80) + `}}}`,
		`{"roles": {"a": {"display_name": "x"}, "a": {"display_name": ` + strings.Repeat("[", 80) + `}}}`,
		`{"roles": {"a": {"display_name": "x"}}, "apis": {"o": {"identifier": "urn:a", "display_name": "O", "token_lifetime_seconds": 1e3}}}`,
		`{"apis": {"o": {"identifier": "urn:a", "display_name": "O", "token_lifetime_seconds": 99999999999999999999}}}`,
		`{"applications": {"p": {"display_name": "P", "type": "spa", "callback_urls": ["http://localhost/cb"]}}}`,
		`{"identity_settings": {"allowed_identifiers": ["email", "email"], "mfa": "x", "password_policy": {}}}`,
		`{"roles": {"a": {"display_name": "x"}`, `{"roles" {}}`, `{"roles": {"a": nul}}`, `{"ro\u006ces": {"\u0061": null}}`,
	}
}

func checkDecodeDocumentAsByTree(t *testing.T, data []byte) {
	t.Helper()
	doc, problems, err := DecodeDocument(data, "/config")
	wantDoc, wantProblems, wantErr := decodeDocumentByTree(data, "/config")
	if diff := cmp.Diff(wantErr, err, cmp.Comparer(func(a, b error) bool { return fmt.Sprint(a) == fmt.Sprint(b) })); diff != "" {
		t.Fatalf("%s: error (-by tree +streamed):\n%s", data, diff)
	}
	if e, ok := err.(*Error); ok {
		if diff := cmp.Diff(wantErr.(*Error).Errors, e.Errors); diff != "" {
			t.Fatalf("%s: errors (-by tree +streamed):\n%s", data, diff)
		}
	}
	if diff := cmp.Diff(wantProblems, problems); diff != "" {
		t.Fatalf("%s: problems (-by tree +streamed):\n%s", data, diff)
	}
	if diff := cmp.Diff(wantDoc, doc); diff != "" {
		t.Fatalf("%s: document (-by tree +streamed):\n%s", data, diff)
	}
}

func TestDecodeDocumentAsByTree(t *testing.T) {
	t.Parallel()
	for _, seed := range decodeDocumentSeeds() {
		checkDecodeDocumentAsByTree(t, []byte(seed))
	}
}

func FuzzDecodeDocumentAsByTree(f *testing.F) {
	for _, seed := range decodeDocumentSeeds() {
		f.Add([]byte(seed))
	}
	f.Fuzz(checkDecodeDocumentAsByTree)
}
