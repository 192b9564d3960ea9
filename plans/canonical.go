package plans

import (
	"bytes"
	"encoding/json"
)

// mustJSON encodes a value the package built itself.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// canonical re-encodes a JSON value with sorted object keys and no spacing,
// so equal values compare equal byte for byte.
func canonical(raw []byte) json.RawMessage {
	if raw == nil {
		return nil
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
	b, _ := json.Marshal(v)
	return b
}
