package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/keenauth/configplans/test/apitest"
)

// BenchmarkApply is the apply of P1's plan of 1,000 creates of ~600-byte
// apis (and of plans that update 2,000 apis and one api) through the
// router, without the HTTP connection. Only the apply request is timed and counted: the
// plan before it, and the plan and apply that delete the 1,000 apis again
// after it, run with the timer stopped. Its allocations and bytes, and
// the process's CPU time per apply (cpu-ms/op, the apply's requests
// only), are the figures to watch; its time is mostly PostgreSQL's.
//
//	go test -run XXX -bench BenchmarkApply -benchmem ./test/api/
func BenchmarkApply(b *testing.B) {
	e := apitest.Setup(b, apitest.Options{})
	apply := func(b *testing.B, id string) time.Duration {
		req := httptest.NewRequest(http.MethodPost, "/v1/config-plans/"+id+":apply", strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+e.Secret)
		req.Header.Set("Content-Type", "application/json")
		w := &discardWriter{header: http.Header{}}
		start := cpuTime(b)
		b.StartTimer()
		e.Handler.ServeHTTP(w, req)
		b.StopTimer()
		took := cpuTime(b) - start
		if w.status != http.StatusOK {
			b.Fatalf("apply %s: %d", id, w.status)
		}
		return took
	}
	b.Run("creates-1000", func(b *testing.B) {
		b.ReportAllocs()
		b.StopTimer()
		var cpu time.Duration
		for range b.N {
			cpu += apply(b, e.Plan(benchAPIs(1000, 0), false)["id"].(string))
			e.Apply(e.Plan(map[string]any{"apis": map[string]any{}}, true)["id"].(string), nil)
		}
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
	})
	// The apply of a plan that updates the n apis an apply made before,
	// each to the other of two variants; the apis are deleted after.
	updates := func(n int) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			b.StopTimer()
			e.Apply(e.Plan(benchAPIs(n, 0), false)["id"].(string), nil)
			var cpu time.Duration
			for i := range b.N {
				cpu += apply(b, e.Plan(benchAPIs(n, i%2+1), false)["id"].(string))
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
			e.Apply(e.Plan(map[string]any{"apis": map[string]any{}}, true)["id"].(string), nil)
		}
	}
	// Their revision (the specs they replace, 1.4 MB) is over 1 MiB.
	b.Run("updates-2000", updates(2000))
	b.Run("update-1", updates(1))
}
