package main

import (
	"encoding/json"
	"fmt"
	"strings"
)

// apiSpec returns the spec of an api resource: an identifier unique to key,
// a display name and scopes with descriptions. With 4 scopes of 100-character
// descriptions it is about 600 bytes of JSON; P5 uses many scopes of long
// descriptions for specs of several KiB. variant changes the first scope's
// description, so that a plan with another variant updates the resource.
func apiSpec(key string, scopes, descLen, variant int) map[string]any {
	ss := make([]map[string]any, scopes)
	for i := range ss {
		desc := fmt.Sprintf("Scope %d of %s, variant %d. ", i, key, variant)
		if i > 0 {
			desc = fmt.Sprintf("Scope %d of %s. ", i, key)
		}
		ss[i] = map[string]any{"value": fmt.Sprintf("items-%02d:read", i), "description": pad(desc, descLen)}
	}
	return map[string]any{
		"identifier":             "https://api.bench.example/" + key,
		"display_name":           "Bench API " + key,
		"scopes":                 ss,
		"token_lifetime_seconds": 3600,
	}
}

// smallSpec is the ~600-byte spec of P1, P2, P3, P4 and P6.
func smallSpec(key string, variant int) map[string]any { return apiSpec(key, 4, 100, variant) }

// pad fills s to n characters with plain prose (no character that JSON
// encoders escape, so sizes are what they look like).
func pad(s string, n int) string {
	const filler = "It lets a client read the catalogue entries that belong to its tenant. "
	var b strings.Builder
	b.WriteString(s)
	for b.Len() < n {
		b.WriteString(filler)
	}
	return b.String()[:n]
}

// apisDocument is a plan-creation body planning the apis type with specs.
func apisDocument(specs map[string]map[string]any) []byte {
	b, err := json.Marshal(map[string]any{"config": map[string]any{"apis": specs}})
	if err != nil {
		panic(err)
	}
	return b
}

// keyedSpecs builds n small specs keyed prefix-00000, prefix-00001, …
func keyedSpecs(prefix string, n, variant int) map[string]map[string]any {
	out := make(map[string]map[string]any, n)
	for i := range n {
		k := fmt.Sprintf("%s-%05d", prefix, i)
		out[k] = smallSpec(k, variant)
	}
	return out
}

// canonicalJSON encodes v with sorted object keys, as the service stores specs.
func canonicalJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
