package idempotency

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"net/url"
	"slices"
	"sync"
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
	f := getFingerprinter(secret)
	defer f.put()
	// The fields before the body are appended to one buffer and hashed by
	// one Write; the body, which can be megabytes, is hashed where it is.
	// The bytes hashed are those of the encoding above.
	b := appendField(f.buf[:0], fingerprintVersion)
	b = appendField(b, method)
	b = appendField(b, route)

	var nameStack [4]string
	names := nameStack[:0]
	for name := range params {
		names = append(names, name)
	}
	slices.Sort(names)
	b = appendCount(b, len(names))
	for _, name := range names {
		b = appendField(b, name)
		b = appendField(b, params[name])
	}

	// An empty query is canonical as it is (url.Values{}.Encode() is "").
	if rawQuery == "" {
		b = appendField(b, "canonical")
		b = appendField(b, "")
	} else if q, err := url.ParseQuery(rawQuery); err == nil {
		b = appendField(b, "canonical")
		b = appendField(b, q.Encode())
	} else {
		b = appendField(b, "raw")
		b = appendField(b, rawQuery)
	}
	b = appendCount(b, len(body))
	f.buf = b

	f.mac.Write(b)
	f.mac.Write(body)
	return hexString(f.mac.Sum(f.sum[:0]))
}

// hexString is hex.EncodeToString of up to 32 bytes in one allocation (the
// string), where EncodeToString makes two: a replay fingerprints its
// request and makes a token.
func hexString(b []byte) string {
	var dst [2 * sha256.Size]byte
	if len(b) > sha256.Size {
		return hex.EncodeToString(b)
	}
	n := hex.Encode(dst[:], b)
	return string(dst[:n])
}

// A fingerprinter is an HMAC keyed by one secret and a buffer, kept in a
// pool between requests: every request with an Idempotency-Key is
// fingerprinted (a replay too), and hmac.New costs more allocations than
// the rest of the fingerprint. Reset returns an HMAC to its keyed state.
type fingerprinter struct {
	secret []byte
	mac    hash.Hash
	buf    []byte
	sum    [sha256.Size]byte
}

var fingerprinters sync.Pool

func getFingerprinter(secret []byte) *fingerprinter {
	if f, ok := fingerprinters.Get().(*fingerprinter); ok && bytes.Equal(f.secret, secret) {
		f.mac.Reset()
		return f
	}
	return &fingerprinter{secret: bytes.Clone(secret), mac: hmac.New(sha256.New, secret), buf: make([]byte, 0, 256)}
}

func (f *fingerprinter) put() {
	if cap(f.buf) <= 4<<10 {
		fingerprinters.Put(f)
	}
}

func appendCount(b []byte, n int) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(n))
}

func appendField(b []byte, f string) []byte {
	return append(appendCount(b, len(f)), f...)
}
