package idempotency

import (
	"encoding/json"

	"github.com/keenauth/configplans/canonjson"
)

// decodeHeader reads the headers of a stored response, a JSON object of
// names to strings, as json.Unmarshal into a map[string]string does. Every
// replay reads one, and what Complete writes ({"Content-Type":"…",
// "Location":"…"}: plain strings, no escapes) is read by a scan of its own;
// anything else is left to encoding/json.
func decodeHeader(b []byte) (map[string]string, error) {
	if h, ok := scanHeader(b); ok {
		return h, nil
	}
	var h map[string]string
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, err
	}
	return h, nil
}

// scanHeader reads an object whose names and values are all plain strings
// (canonjson.ScanString); ok is false for anything else.
func scanHeader(b []byte) (map[string]string, bool) {
	i := canonjson.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	h := make(map[string]string, 4)
	i = canonjson.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return h, canonjson.SkipSpace(b, i+1) == len(b)
	}
	for {
		name, j, ok := plainString(b, i)
		if !ok {
			return nil, false
		}
		i = canonjson.SkipSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		value, j, ok := plainString(b, canonjson.SkipSpace(b, i+1))
		if !ok {
			return nil, false
		}
		h[name] = value // the last of a repeated name, as encoding/json
		i = canonjson.SkipSpace(b, j)
		switch {
		case i < len(b) && b[i] == ',':
			i = canonjson.SkipSpace(b, i+1)
		case i < len(b) && b[i] == '}':
			return h, canonjson.SkipSpace(b, i+1) == len(b)
		default:
			return nil, false
		}
	}
}

// plainString reads the string token at b[i] when its content is its
// bytes as they are.
func plainString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", 0, false
	}
	end, plain, ok := canonjson.ScanString(b, i)
	if !ok || !plain {
		return "", 0, false
	}
	return string(b[i+1 : end-1]), end, true
}
