package config

import (
	"crypto/rand"
	"strings"

	"github.com/oklog/ulid/v2"
)

// ID prefixes of the contract.
const (
	PrefixEnvironment = "env_"
	PrefixAPIKey      = "key_"
	PrefixPlan        = "cfgp_"
	PrefixRevision    = "cfgr_"
	PrefixLog         = "log_"
	PrefixConnection  = "con_"
	PrefixEvent       = "evt_"
	PrefixRequest     = "req_"
)

// NewID returns prefix followed by a lowercase ULID: 26 Crockford base32
// characters, ordered by time (monotonic within a millisecond of this process).
//
// It takes two allocations, the ULID's (ulid.Make reads its entropy into
// it) and the id's: String and ToLower made two more strings for every id,
// and an apply makes one id for each changed resource's log entry.
func NewID(prefix string) string {
	var body [ulid.EncodedSize]byte
	_ = ulid.Make().MarshalTextTo(body[:]) // the size is right
	for i, c := range body {
		if 'A' <= c && c <= 'Z' {
			body[i] = c + 'a' - 'A'
		}
	}
	return prefix + string(body[:])
}

// idChar holds the characters of an id's body: lowercase Crockford
// base32, [0-9a-hjkmnp-tv-z].
var idChar = func() (t [256]bool) {
	for _, c := range []byte("0123456789abcdefghjkmnpqrstvwxyz") {
		t[c] = true
	}
	return t
}()

// ValidID reports whether s is prefix followed by a well-formed ULID. It
// runs several times for every request (the API key, the Request-Id, the
// access log's plan id), so it reads a table rather than a regexp.
func ValidID(prefix, s string) bool {
	body, ok := strings.CutPrefix(s, prefix)
	if !ok || len(body) != 26 || body[0] > '7' {
		return false
	}
	for i := 0; i < len(body); i++ {
		if !idChar[body[i]] {
			return false
		}
	}
	return true
}

// RandomBase32 returns n random lowercase Crockford base32 characters.
func RandomBase32(n int) string {
	const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	for i := range b {
		b[i] = alphabet[b[i]&31]
	}
	return string(b)
}
