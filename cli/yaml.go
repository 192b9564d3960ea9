package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
)

// YAML documents are read with github.com/goccy/go-yaml: it is actively
// maintained, decodes YAML 1.2's core types (yes, on and 2026-01-01 stay
// strings), keeps mapping order, refuses a repeated key, and locates every
// syntax error by line and column, which the messages below quote.

// isYAML tells how to read -f: a .yaml or .yml file is YAML, a .json file
// JSON; any other name (or standard input) is JSON when its content starts
// as a JSON document does, with { or [, and YAML otherwise.
func isYAML(path string, b []byte) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return true
	case ".json":
		return false
	}
	t := bytes.TrimLeft(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")), " \t\r\n")
	return len(t) > 0 && t[0] != '{' && t[0] != '['
}

// yamlToJSON converts one YAML document to JSON, members in the order of
// the file. Values JSON cannot hold (.inf, .nan, !!binary, a mapping as a
// key) and a file of several documents are refused, naming the place.
func yamlToJSON(name string, b []byte) ([]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b), yaml.UseOrderedMap())
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, usagef("%s is empty: it must hold a configuration document (a YAML mapping)", name)
		}
		return nil, usagef("%s is not valid YAML: %s", name, yamlErrorAt(err))
	}
	var next any
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, usagef("%s is not valid YAML: %s", name, yamlErrorAt(err))
		}
		return nil, usagef("%s holds more than one YAML document (---): it must hold one configuration document", name)
	}
	if _, ok := v.(yaml.MapSlice); !ok {
		what := "a scalar"
		switch v.(type) {
		case nil:
			what = "null"
		case []any:
			what = "a sequence"
		}
		return nil, usagef("%s is not a YAML mapping: its top level is %s", name, what)
	}
	var out bytes.Buffer
	if err := writeYAMLValue(&out, v, ""); err != nil {
		return nil, usagef("%s cannot be read as JSON: %v", name, err)
	}
	return out.Bytes(), nil
}

// yamlErrorAt is a YAML error as "line L, column C: message".
func yamlErrorAt(err error) string {
	var ye yaml.Error
	if errors.As(err, &ye) {
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			return fmt.Sprintf("line %d, column %d: %s", tk.Position.Line, tk.Position.Column, ye.GetMessage())
		}
		return ye.GetMessage()
	}
	return err.Error()
}

// writeYAMLValue writes a decoded YAML value as JSON; at is its JSON
// pointer, for errors.
func writeYAMLValue(w *bytes.Buffer, v any, at string) error {
	switch x := v.(type) {
	case yaml.MapSlice:
		w.WriteByte('{')
		for i, item := range x {
			key, err := yamlKey(item.Key, at)
			if err != nil {
				return err
			}
			if i > 0 {
				w.WriteByte(',')
			}
			writeJSONString(w, key)
			w.WriteByte(':')
			if err := writeYAMLValue(w, item.Value, at+"/"+escapeToken(key)); err != nil {
				return err
			}
		}
		w.WriteByte('}')
	case []any:
		w.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				w.WriteByte(',')
			}
			if err := writeYAMLValue(w, e, at+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
		w.WriteByte(']')
	case nil:
		w.WriteString("null")
	case string:
		writeJSONString(w, x)
	case bool:
		w.WriteString(strconv.FormatBool(x))
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		fmt.Fprintf(w, "%d", x)
	case float32:
		return writeFloat(w, float64(x), at)
	case float64:
		return writeFloat(w, x, at)
	default:
		return fmt.Errorf("the value at %s (%T) has no JSON form", pointerOrTop(at), v)
	}
	return nil
}

func writeFloat(w *bytes.Buffer, f float64, at string) error {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Errorf("the value at %s (%v) is not a JSON number", pointerOrTop(at), f)
	}
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	w.Write(b)
	return nil
}

// yamlKey is a mapping key as a JSON member name: a scalar, written as
// YAML wrote it.
func yamlKey(k any, at string) (string, error) {
	switch x := k.(type) {
	case string:
		return x, nil
	case nil:
		return "null", nil
	case bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return fmt.Sprint(x), nil
	}
	return "", fmt.Errorf("a key in %s is not a scalar, so it cannot be a JSON member name", pointerOrTop(at))
}

func writeJSONString(w *bytes.Buffer, s string) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	w.Truncate(w.Len() - 1) // the newline Encode adds
}

// escapeToken writes an RFC 6901 reference token.
func escapeToken(t string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(t)
}

func pointerOrTop(at string) string {
	if at == "" {
		return "the top level"
	}
	return at
}
