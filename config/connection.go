package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
)

// OIDCMaterial is the OIDC member of an enterprise connection spec.
type OIDCMaterial struct {
	Issuer   string   `json:"issuer"`
	ClientID string   `json:"client_id"`
	Scopes   []string `json:"scopes"`
}

// ConnectionView is what the domain reads of a connection spec.
type ConnectionView struct {
	Type   string          `json:"type"`
	Active bool            `json:"active"`
	OIDC   json.RawMessage `json:"oidc"`
	Social *struct {
		Provider          string `json:"provider"`
		UseOwnCredentials bool   `json:"use_own_credentials"`
		ClientID          string `json:"client_id"`
	} `json:"social"`
}

// ViewConnection reads a connection spec (a null oidc as none).
func ViewConnection(spec json.RawMessage) ConnectionView {
	var v ConnectionView
	_ = json.Unmarshal(spec, &v)
	if string(v.OIDC) == "null" {
		v.OIDC = nil
	}
	return v
}

// MaterialHash identifies a connection's OIDC material (never its secret).
func MaterialHash(oidc json.RawMessage) string {
	sum := sha256.Sum256(Canonical(oidc))
	return hex.EncodeToString(sum[:])
}

// SecretRef names the client secret of a connection.
func SecretRef(key string) string {
	return "KEENAUTH_CONNECTION_" + strings.ToUpper(strings.ReplaceAll(key, "-", "_")) + "_CLIENT_SECRET"
}

// ResourceKey is the form of a resource key.
var ResourceKey = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// ValidRef reports whether ref is "<kind>/<key>" of a known kind.
func ValidRef(ref string) bool {
	kind, key, ok := strings.Cut(ref, "/")
	if !ok {
		return false
	}
	if _, known := LookupKind(Kind(kind)); !known {
		return false
	}
	return ResourceKey.MatchString(key)
}

// ValidHost reports whether h is a lowercase DNS name: two or more labels of
// [a-z0-9-], 1–63 characters each, no leading or trailing '-', 253 in all,
// no port.
func ValidHost(h string) bool {
	if len(h) == 0 || len(h) > 253 {
		return false
	}
	labels := strings.Split(h, ".")
	if len(labels) < 2 {
		return false
	}
	return !slices.ContainsFunc(labels, func(l string) bool {
		if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return true
		}
		return strings.IndexFunc(l, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') }) >= 0
	})
}
