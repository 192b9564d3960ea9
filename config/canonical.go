package config

import (
	"bytes"
	"encoding/json"

	"github.com/keenauth/configplans/canonjson"
)

// MustJSON encodes a value the package built itself.
// Like every JSON the package writes, it leaves <, > and & as they are:
// json.Marshal would write them as \u003c, \u003e and \u0026, and a spec
// stored in that form would no longer be byte-equal to the same spec
// planned again.
func MustJSON(v any) []byte {
	b, err := Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Marshal is json.Marshal without HTML escaping.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Canonical re-encodes a JSON value with sorted object keys and no spacing,
// so equal values compare equal byte for byte: by one scan (canonjson), and
// by a decode and an encode for what the scan leaves to encoding/json.
func Canonical(raw []byte) json.RawMessage {
	if raw == nil {
		return nil
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	if b, ok := canonjson.Append(make([]byte, 0, len(raw)), raw); ok {
		return b
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return json.RawMessage(raw)
	}
	if v == nil {
		return nil
	}
	b, _ := Marshal(v)
	return b
}
