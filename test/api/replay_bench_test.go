package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/keenauth/configplans/test/apitest"
)

// BenchmarkIdempotentReplay is the replay of an applied plan through the
// router, the key cache and Redis (P3 of the benchmarks without the HTTP
// connection): its allocations are the figure to watch, its time is
// mostly the Redis round trip.
//
//	go test -run XXX -bench BenchmarkIdempotentReplay -benchmem ./test/api/
func BenchmarkIdempotentReplay(b *testing.B) {
	e := apitest.Setup(b, apitest.Options{})
	e.RequireRedis()
	p := e.Plan(idemDoc("bench"), false)
	path := idemApplyPath(p["id"].(string))
	first := idemPost(e, path, map[string]any{}, "bench-replay")
	if first.Status != http.StatusOK {
		b.Fatalf("apply: %d %s", first.Status, first.Body)
	}
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+e.Secret)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "bench-replay")
		rec := httptest.NewRecorder()
		e.Handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || rec.Header().Get("Idempotent-Replayed") != "true" {
			b.Fatalf("replay: %d %s", rec.Code, rec.Body)
		}
	}
}
