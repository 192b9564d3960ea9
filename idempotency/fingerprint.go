package idempotency

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"net/url"
	"slices"
)

// fingerprintVersion starts every fingerprinted encoding. Plans keep the
// fingerprint of the request that applied them (SPEC §9: PostgreSQL is the
// source of truth), so the encoding must never change silently: a new
// encoding gets a new version.
const fingerprintVersion = "keenauth-idempotency-fingerprint-v1"

// Fingerprint identifies a request for the Idempotency-Key check: two
// requests with the same key must have the same fingerprint to be the same
// request. It is HMAC-SHA256 keyed by secret (KEENAUTHD_IDEMPOTENCY_SECRET),
// so a secret sent in the body cannot be guessed back from a stored record,
// over a length-prefixed encoding of the method, the route template (e.g.
// "/v1/config-plans/:plan_id"), the path parameters sorted by name, the query
// and the body. The result is lowercase hex.
//
// The query is canonicalised (parsed, then re-encoded with sorted keys; the
// order of the values of one key is kept, since it can matter), so
// "?b=1&a=2" and "?a=2&b=1" are the same request. A query that does not parse
// is fingerprinted as sent, marked so that it cannot collide with a
// canonical one.
func Fingerprint(secret []byte, method, route string, params map[string]string, rawQuery string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	writeField(m, []byte(fingerprintVersion))
	writeField(m, []byte(method))
	writeField(m, []byte(route))

	names := make([]string, 0, len(params))
	for name := range params {
		names = append(names, name)
	}
	slices.Sort(names)
	writeCount(m, len(names))
	for _, name := range names {
		writeField(m, []byte(name))
		writeField(m, []byte(params[name]))
	}

	if q, err := url.ParseQuery(rawQuery); err == nil {
		writeField(m, []byte("canonical"))
		writeField(m, []byte(q.Encode()))
	} else {
		writeField(m, []byte("raw"))
		writeField(m, []byte(rawQuery))
	}

	writeField(m, body)
	return hex.EncodeToString(m.Sum(nil))
}

func writeCount(h hash.Hash, n int) {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(n))
	h.Write(buf[:])
}

func writeField(h hash.Hash, b []byte) {
	writeCount(h, len(b))
	h.Write(b)
}
