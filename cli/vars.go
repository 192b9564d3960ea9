package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// Variables in document files: a string value of a -f document may hold
// ${NAME}, whole or inside a longer string; $${ writes a literal ${. The
// CLI replaces every placeholder before it sends anything: the API never
// sees one. Only values are read: a member name (a resource key, a field
// name) is never a placeholder, since the keys are what identifies a
// resource in every environment alike.

// varNamePattern is a variable's name.
var varNamePattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// variable is one value of --vars or --var, and where it came from.
type variable struct {
	value  json.RawMessage // compact JSON
	source string          // "vars.yaml", "--var"
}

// isString reports a JSON string value, and returns it.
func (v variable) isString() (string, bool) {
	var s string
	if len(v.value) == 0 || v.value[0] != '"' || json.Unmarshal(v.value, &s) != nil {
		return "", false
	}
	return s, true
}

// variables is a set of named values: --vars files in order (a later file
// wins), then --var NAME=VALUE (a string, winning over every file).
type variables map[string]variable

// readVariables reads the --vars files and the --var assignments.
func readVariables(files, assignments []string) (variables, error) {
	vars := variables{}
	for _, f := range files {
		if err := vars.readFile(f); err != nil {
			return nil, err
		}
	}
	for _, a := range assignments {
		name, value, ok := strings.Cut(a, "=")
		if !ok {
			return nil, cmdLinef("--var %q is not NAME=VALUE", a)
		}
		if !varNamePattern.MatchString(name) {
			return nil, cmdLinef("--var %s: a variable's name is an upper-case letter, then upper-case letters, digits or _ ([A-Z][A-Z0-9_]*)", name)
		}
		b, _ := json.Marshal(value)
		vars[name] = variable{value: b, source: "--var"}
	}
	return vars, nil
}

// readFile adds the variables of one --vars file: a JSON or YAML object of
// name → value.
func (vars variables) readFile(path string) error {
	name := path
	b, err := os.ReadFile(path)
	if err != nil {
		return usagef("cannot read the variables of --vars %s: %v", path, err)
	}
	if isYAML(path, b) {
		if b, err = yamlToJSON(name, b); err != nil {
			return err
		}
	}
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		if err == nil {
			return usagef("--vars %s must hold an object of name → value, not null", name)
		}
		return usagef("--vars %s must hold an object of name → value: %s", name, jsonErrorAt(b, err))
	}
	var bad []string
	for k, v := range m {
		if !varNamePattern.MatchString(k) {
			bad = append(bad, k)
			continue
		}
		var c bytes.Buffer
		if err := json.Compact(&c, v); err != nil {
			return usagef("--vars %s: the value of %s is not valid JSON: %v", name, k, err)
		}
		vars[k] = variable{value: c.Bytes(), source: name}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return usagef("--vars %s: %s: a variable's name is an upper-case letter, then upper-case letters, digits or _ ([A-Z][A-Z0-9_]*)",
			name, quoteList(bad))
	}
	return nil
}

// placeholderProblem is a placeholder that cannot be replaced.
type placeholderProblem struct {
	pointer string // in the document
	text    string // the placeholder, or the malformed text
	reason  string
}

// placeholderError lists every placeholder of a document that cannot be
// replaced. Nothing was sent.
type placeholderError struct {
	file     string
	problems []placeholderProblem
}

func (e *placeholderError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d placeholder(s) of %s cannot be replaced, so nothing was sent:", len(e.problems), e.file)
	for _, p := range e.problems {
		fmt.Fprintf(&b, "\n  %s: %s %s", pointerOrTop(p.pointer), p.text, p.reason)
	}
	b.WriteString("\nGive each variable a value with --vars FILE or --var NAME=VALUE; write $${ for a literal ${.")
	return b.String()
}

// substitution is the outcome of replacing a document's placeholders.
type substitution struct {
	doc  json.RawMessage
	used map[string]bool
}

// substitute replaces every placeholder of the JSON document doc with the
// variables' values. A value that is exactly "${NAME}" takes the
// variable's value whatever its type; inside a longer string a string,
// number or boolean is written as its text. A value is not read again for
// placeholders. Every placeholder that cannot be replaced is reported, by
// its pointer in the document, in one *placeholderError. doc is returned
// unchanged (the same bytes) when it holds no placeholder and no $${.
func substitute(file string, doc json.RawMessage, vars variables) (substitution, error) {
	s := substitution{used: map[string]bool{}}
	var problems []placeholderProblem
	w := &jsonRewriter{str: func(ptr, v string, out *bytes.Buffer) bool {
		if !strings.Contains(v, "${") {
			return false
		}
		problems = append(problems, s.replaceString(ptr, v, vars, out)...)
		return true
	}}
	out, err := w.rewrite(doc)
	if err != nil {
		return s, usagef("%s: %v", file, err)
	}
	if len(problems) > 0 {
		return s, &placeholderError{file: file, problems: problems}
	}
	s.doc = out
	return s, nil
}

// replaceString writes the JSON value that the string v at ptr stands for
// to out, and returns every placeholder it could not replace.
func (s *substitution) replaceString(ptr, v string, vars variables, out *bytes.Buffer) []placeholderProblem {
	if name, ok := wholePlaceholder(v); ok {
		vr, found := vars[name]
		if !found {
			writeJSONString(out, v)
			return []placeholderProblem{{ptr, v, "has no value"}}
		}
		s.used[name] = true
		out.Write(vr.value)
		return nil
	}
	var b strings.Builder
	var problems []placeholderProblem
	for i := 0; i < len(v); {
		switch {
		case strings.HasPrefix(v[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(v[i:], "${"):
			end := strings.IndexByte(v[i:], '}')
			if end < 0 || !varNamePattern.MatchString(v[i+2:i+end]) {
				text := v[i:]
				if end >= 0 {
					text = v[i : i+end+1]
				}
				if len(text) > 40 {
					// An unclosed ${ runs to the end of a value of any length.
					text = strings.ToValidUTF8(text[:40], "") + "…"
				}
				problems = append(problems, placeholderProblem{ptr, text, "is not a placeholder: a name is [A-Z][A-Z0-9_]*, and $${ writes a literal ${"})
				i += 2
				continue
			}
			name := v[i+2 : i+end]
			i += end + 1
			vr, found := vars[name]
			if !found {
				problems = append(problems, placeholderProblem{ptr, "${" + name + "}", "has no value"})
				continue
			}
			s.used[name] = true
			text, ok := scalarText(vr.value)
			if !ok {
				problems = append(problems, placeholderProblem{ptr, "${" + name + "}",
					"is inside a longer string, but its value (from " + vr.source + ") is a list, an object or null: only a whole value \"${" + name + "}\" takes those"})
				continue
			}
			b.WriteString(text)
		default:
			b.WriteByte(v[i])
			i++
		}
	}
	writeJSONString(out, b.String())
	return problems
}

// wholePlaceholder reports a string that is exactly ${NAME}.
func wholePlaceholder(v string) (string, bool) {
	if !strings.HasPrefix(v, "${") || !strings.HasSuffix(v, "}") {
		return "", false
	}
	name := v[2 : len(v)-1]
	return name, varNamePattern.MatchString(name)
}

// scalarText is a string, number or boolean value as the text it puts
// inside a longer string.
func scalarText(v json.RawMessage) (string, bool) {
	switch {
	case len(v) == 0:
		return "", false
	case v[0] == '"':
		var s string
		err := json.Unmarshal(v, &s)
		return s, err == nil
	case string(v) == "true" || string(v) == "false":
		return string(v), true
	case v[0] == '-' || (v[0] >= '0' && v[0] <= '9'):
		return string(v), true
	}
	return "", false
}

// resolve replaces the placeholders of doc's configuration (the document
// itself, or the config member of an export) with vars, and warns on
// stderr about each variable no placeholder used.
func resolve(stderr io.Writer, file string, doc planDocument, vars variables) (planDocument, error) {
	sub, err := substitute(file, doc.config, vars)
	if err != nil {
		return doc, err
	}
	for _, name := range sub.unused(vars) {
		fmt.Fprintf(stderr, "Warning: variable %s (from %s) is used by no placeholder of %s.\n", name, vars[name].source, file)
	}
	if len(sub.doc) > maxDocument {
		return doc, usagef("the document of %s is over 12 MiB once its placeholders are replaced, the API's limit: plan fewer types at once", file)
	}
	doc.config = sub.doc
	return doc, nil
}

// unused lists the variables no placeholder used, sorted.
func (s substitution) unused(vars variables) []string {
	var out []string
	for name := range vars {
		if !s.used[name] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// placeholdersFor is the reverse of substitute, for config export --vars:
// each string value equal to a string variable's value becomes "${NAME}"
// (whole values only: a value that merely contains one stays as it is),
// and a literal ${ in any other string is written $${. A value equal to two
// variables' values is ambiguous: every such value is reported, naming the
// variables. A variable whose value is not a string, or is empty, is not
// matched (an empty string is too common to stand for one variable).
// used names the variables that became placeholders; inside lists, in
// document order, each value that holds a variable's
// value inside a longer string: it stays as it is, which is worth a
// warning, since the variable differs between environments.
func placeholdersFor(doc json.RawMessage, vars variables) (templ json.RawMessage, used map[string]bool, inside []string, err error) {
	byValue := map[string][]string{}
	for name, v := range vars {
		if s, ok := v.isString(); ok && s != "" {
			byValue[s] = append(byValue[s], name)
		}
	}
	names := sortedNames(vars)
	used = map[string]bool{}
	var ambiguous []string
	w := &jsonRewriter{str: func(ptr, v string, out *bytes.Buffer) bool {
		if len(byValue[v]) == 0 {
			for _, name := range names {
				if s, ok := vars[name].isString(); ok && s != "" && strings.Contains(v, s) {
					inside = append(inside, fmt.Sprintf("%s holds the value of %s inside a longer string: only whole values become placeholders, so it is kept as it is", pointerOrTop(ptr), name))
				}
			}
		}
		if names := byValue[v]; len(names) > 0 {
			sort.Strings(names)
			if len(names) > 1 {
				ambiguous = append(ambiguous, fmt.Sprintf("  %s: %q is the value of %s", pointerOrTop(ptr), v, strings.Join(names, " and ")))
				return false
			}
			used[names[0]] = true
			writeJSONString(out, "${"+names[0]+"}")
			return true
		}
		if strings.Contains(v, "${") {
			writeJSONString(out, strings.ReplaceAll(v, "${", "$${"))
			return true
		}
		return false
	}}
	out, err := w.rewrite(doc)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("the export is not valid JSON: %w", err)
	}
	if len(ambiguous) > 0 {
		return nil, nil, nil, usagef("%d value(s) of the export equal the values of several variables, so no one placeholder can stand for them:\n%s\nGive those variables different values.",
			len(ambiguous), strings.Join(ambiguous, "\n"))
	}
	return out, used, inside, nil
}

// jsonRewriter copies a JSON value, member order and number text kept,
// letting str replace any string value (not a member name): str writes the
// replacement to out and returns true, or returns false to keep the value.
// When str replaced nothing, rewrite returns the input bytes themselves.
type jsonRewriter struct {
	str     func(ptr, v string, out *bytes.Buffer) bool
	changed bool
}

func (w *jsonRewriter) rewrite(doc json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var out bytes.Buffer
	if err := w.value(dec, "", &out); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one JSON value")
	}
	if !w.changed {
		return doc, nil
	}
	return out.Bytes(), nil
}

func (w *jsonRewriter) value(dec *json.Decoder, ptr string, out *bytes.Buffer) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			out.WriteByte('{')
			for i := 0; dec.More(); i++ {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := kt.(string)
				if i > 0 {
					out.WriteByte(',')
				}
				writeJSONString(out, key)
				out.WriteByte(':')
				if err := w.value(dec, ptr+"/"+escapeToken(key), out); err != nil {
					return err
				}
			}
			out.WriteByte('}')
		case '[':
			out.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					out.WriteByte(',')
				}
				if err := w.value(dec, fmt.Sprintf("%s/%d", ptr, i), out); err != nil {
					return err
				}
			}
			out.WriteByte(']')
		}
		_, err := dec.Token() // the closing delimiter
		return err
	case string:
		if w.str != nil && w.str(ptr, t, out) {
			w.changed = true
			return nil
		}
		writeJSONString(out, t)
	case json.Number:
		out.WriteString(t.String())
	case bool:
		fmt.Fprint(out, t)
	case nil:
		out.WriteString("null")
	}
	return nil
}

// varFlags are --vars FILE… and --var NAME=VALUE….
type varFlags struct {
	files       []string
	assignments []string
}

func (f *varFlags) add(c *cobra.Command) {
	c.Flags().StringArrayVar(&f.files, "vars", nil, "a JSON or YAML object of variable name → value (repeat: a later file wins)")
	c.Flags().StringArrayVar(&f.assignments, "var", nil, "a variable as NAME=VALUE, a string (repeat; wins over --vars)")
	_ = c.MarkFlagFilename("vars", "json", "yaml", "yml")
}

func (f *varFlags) read() (variables, error) { return readVariables(f.files, f.assignments) }

// documentName is how messages name the -f file.
func documentName(file string) string {
	if file == "-" {
		return "standard input"
	}
	return file
}

// sortedNames are the variables' names in order.
func sortedNames(vars variables) []string {
	out := make([]string, 0, len(vars))
	for name := range vars {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
