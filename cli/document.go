package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// maxDocument is the plan creation body limit of the API (12 MiB): a
// bigger file is refused before it is sent.
const maxDocument = 12 << 20

// planDocument is what -f holds: the configuration document and, for an
// export, the versions it was exported at.
type planDocument struct {
	config json.RawMessage
	// versions is the export's "versions" member as written (nil: none),
	// sent with the plan so that a resource changed since the export
	// refuses it.
	versions json.RawMessage
}

// readDocument reads the configuration document of -f: a file path, or
// "-" for stdin. The file holds either the document itself or an object
// whose top level is {"config": …} as an export writes it, with its
// "versions" member. Either may carry the "$schema" an editor uses
// (/v1/config-schema.json), which is not sent. A JSON document's bytes are
// sent as they are (but for that member): the API
// is the one that validates them. A YAML document (see isYAML) is converted
// to the JSON it stands for, members in the file's order, so the API's
// pointers are those of the JSON equivalent.
func readDocument(path string, stdin io.Reader) (planDocument, error) {
	name := path
	var r io.Reader
	if path == "-" {
		name, r = "standard input", stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return planDocument{}, usagef("cannot read the document: %v", err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxDocument+1))
	if err != nil {
		return planDocument{}, usagef("cannot read the document from %s: %v", name, err)
	}
	if len(b) > maxDocument {
		return planDocument{}, usagef("the document in %s is over 12 MiB, the API's limit: plan fewer types at once", name)
	}
	if isYAML(path, b) {
		if b, err = yamlToJSON(name, b); err != nil {
			return planDocument{}, err
		}
		if len(b) > maxDocument {
			return planDocument{}, usagef("the document in %s is over 12 MiB as JSON, the API's limit: plan fewer types at once", name)
		}
	}
	return unwrapDocument(name, b)
}

func unwrapDocument(name string, b []byte) (planDocument, error) {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	if len(bytes.TrimSpace(b)) == 0 {
		return planDocument{}, usagef("%s is empty: it must hold a configuration document (a JSON object)", name)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return planDocument{}, usagef("%s is not a JSON object: %s", name, jsonErrorAt(b, err))
	}
	if top == nil {
		return planDocument{}, usagef("%s is not a JSON object: it holds null", name)
	}
	cfg, wrapped := top["config"]
	if !wrapped {
		doc := json.RawMessage(bytes.TrimSpace(b))
		if _, ok := top["$schema"]; ok {
			// An editor's "$schema" is not a type of the document.
			var err error
			if doc, err = withoutMember(doc, "$schema"); err != nil {
				return planDocument{}, usagef("%s: %v", name, err)
			}
		}
		return planDocument{config: doc}, nil
	}
	var extra []string
	for k := range top {
		if k != "config" && k != "versions" && k != "$schema" {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return planDocument{}, usagef("%s has a top-level \"config\" member, so it is read as an export; an export has no member %s",
			name, quoteList(extra))
	}
	doc := planDocument{config: cfg}
	if v, ok := top["versions"]; ok && string(bytes.TrimSpace(v)) != "null" {
		doc.versions = v
	}
	return doc, nil
}

// withoutMember is the JSON object obj without its top-level member name,
// the other members as they are, in their order.
func withoutMember(obj json.RawMessage, name string) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil { // {
		return nil, err
	}
	var out bytes.Buffer
	out.WriteByte('{')
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		if key == name {
			continue
		}
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		out.Write(k)
		out.WriteByte(':')
		out.Write(v)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// jsonErrorAt locates a JSON syntax error by line and column.
func jsonErrorAt(b []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var off int64
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		return "the top level is a JSON " + te.Value
	default:
		return err.Error()
	}
	// Offset counts the bytes read, the offending one included.
	line, col := 1, 1
	for _, c := range b[:min(max(int(off)-1, 0), len(b))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("%s (line %d, column %d)", err, line, col)
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
