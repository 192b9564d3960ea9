package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/keenauth/configplans/test/apitest"
)

// BenchmarkRevisionDiff is P10 of the benchmarks without the HTTP
// connection: the diff of the revision of an apply that updated 1,000 apis
// of ~600 bytes (each first scope's description changed since) and, as its
// bound, the export of the same apis, through the router. Its allocations
// and bytes are the figures to watch; the ratio of the two times is P10's.
//
//	go test -run XXX -bench BenchmarkRevisionDiff -benchmem ./test/api/
func BenchmarkRevisionDiff(b *testing.B) {
	e := apitest.Setup(b, apitest.Options{})
	apis := func(variant int) map[string]any { return benchAPIs(1000, variant) }
	e.Apply(e.Plan(apis(0), false)["id"].(string), nil)
	rev, _ := e.Apply(e.Plan(apis(1), false)["id"].(string), nil)["revision_id"].(string)
	if rev == "" {
		b.Fatal("the update kept no revision")
	}
	// The process's CPU time per request (user and system, the runtime's
	// collections included) is reported beside the time: on a loaded
	// machine it moves far less than the time does.
	get := func(b *testing.B, path string) {
		start := cpuTime(b)
		defer func() { b.ReportMetric(float64((cpuTime(b)-start).Microseconds())/1000/float64(b.N), "cpu-ms/op") }()
		for b.Loop() {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.Header.Set("Authorization", "Bearer "+e.Secret)
			w := &discardWriter{header: http.Header{}}
			e.Handler.ServeHTTP(w, req)
			if w.status != http.StatusOK || w.n < 1<<19 {
				b.Fatalf("GET %s: %d, %d bytes", path, w.status, w.n)
			}
		}
	}
	b.Run("diff", func(b *testing.B) { b.ReportAllocs(); get(b, "/v1/config-revisions/"+rev+"/diff") })
	b.Run("export", func(b *testing.B) { b.ReportAllocs(); get(b, "/v1/config?types=api") })
}

// discardWriter is a ResponseWriter that counts the body and keeps none of
// it, as a connection would: httptest's recorder would add the growth of
// its buffer to the figures.
type discardWriter struct {
	header http.Header
	status int
	n      int
}

func (w *discardWriter) Header() http.Header { return w.header }

func (w *discardWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.n += len(p)
	return len(p), nil
}

func (w *discardWriter) Flush() {}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchAPIs is a document of n apis of ~600 bytes (P1's specs: four scopes
// with descriptions), whose first scope's description names variant.
func benchAPIs(n, variant int) map[string]any {
	m := map[string]any{}
	for i := range n {
		key := fmt.Sprintf("r-%05d", i)
		scopes := make([]any, 4)
		for j := range scopes {
			desc := fmt.Sprintf("Scope %d of %s, variant %d. ", j, key, variant)
			if j > 0 {
				desc = fmt.Sprintf("Scope %d of %s. ", j, key)
			}
			desc += strings.Repeat("It lets a client read the catalogue entries that belong to its tenant. ", 2)
			scopes[j] = map[string]any{"value": fmt.Sprintf("items-%02d:read", j), "description": desc[:100]}
		}
		m[key] = map[string]any{"identifier": "https://api.bench.example/" + key, "display_name": "Bench API " + key,
			"scopes": scopes, "token_lifetime_seconds": 3600}
	}
	return map[string]any{"apis": m}
}
