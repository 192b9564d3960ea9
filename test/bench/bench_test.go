package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestPercentileIsTheNearestRankSampleNeverAnAverage(t *testing.T) {
	t.Parallel()
	ms := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	// 100 samples 1..100 ms, shuffled: p99 is the 99th smallest, p50 the 50th.
	var hundred []int
	for i := 100; i >= 1; i-- {
		hundred = append(hundred, (i*37)%100+1)
	}
	for _, tc := range []struct {
		name    string
		samples []time.Duration
		p       float64
		want    time.Duration
	}{
		{"p99 of 100", ms(hundred...), 99, 99 * time.Millisecond},
		{"p50 of 100", ms(hundred...), 50, 50 * time.Millisecond},
		{"p100 is the maximum", ms(hundred...), 100, 100 * time.Millisecond},
		{"median of an even count is the lower middle sample", ms(4, 1, 3, 2), 50, 2 * time.Millisecond},
		{"median of an odd count is the middle sample", ms(5, 1, 9), 50, 5 * time.Millisecond},
		{"p99 of 10 samples is the largest", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 50), 99, 50 * time.Millisecond},
		{"one sample", ms(7), 99, 7 * time.Millisecond},
		{"no sample", nil, 50, 0},
	} {
		if got := percentile(tc.samples, tc.p); got != tc.want {
			t.Errorf("%s: percentile(%v) = %v, want %v", tc.name, tc.p, got, tc.want)
		}
	}
}

func TestPercentileLeavesTheSamplesInTheirOrder(t *testing.T) {
	t.Parallel()
	s := []time.Duration{3, 1, 2}
	percentile(s, 50)
	if s[0] != 3 || s[1] != 1 || s[2] != 2 {
		t.Errorf("samples reordered: %v", s)
	}
}

func TestSmallSpecIsAbout600Bytes(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"r-00000", "o-09999", "bench"} {
		if n := len(canonicalJSON(smallSpec(key, 123456))); n < 550 || n > 700 {
			t.Errorf("smallSpec(%q) is %d bytes, want about 600", key, n)
		}
	}
}

func TestBigSpecVariantsDifferOnlyByDisplayName(t *testing.T) {
	t.Parallel()
	a, b := bigSpec("big-00001", 0), bigSpec("big-00001", 1)
	if a["display_name"] == b["display_name"] {
		t.Fatal("variants have the same display name: a plan would not update them")
	}
	delete(a, "display_name")
	delete(b, "display_name")
	if string(canonicalJSON(a)) != string(canonicalJSON(b)) {
		t.Error("variants differ beyond the display name: the diff of P5's updates would not be small")
	}
	if n := len(canonicalJSON(bigSpec("big-00001", 0))); n < 8000 || n > 12000 {
		t.Errorf("bigSpec is %d bytes, want about 9.6 KiB", n)
	}
}

func TestDocumentsAreValidPlanBodies(t *testing.T) {
	t.Parallel()
	var body struct {
		Config struct {
			APIs map[string]struct {
				Identifier string `json:"identifier"`
				Scopes     []struct {
					Value       string `json:"value"`
					Description string `json:"description"`
				} `json:"scopes"`
			} `json:"apis"`
		} `json:"config"`
	}
	if err := json.Unmarshal(apisDocument(keyedSpecs("r", 3, 0)), &body); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for k, api := range body.Config.APIs {
		if seen[api.Identifier] {
			t.Errorf("identifier %s repeated: the plan would be refused as a duplicate", api.Identifier)
		}
		seen[api.Identifier] = true
		for _, s := range api.Scopes {
			if len(s.Description) > 256 {
				t.Errorf("%s: a scope description of %d characters is over the spec's 256", k, len(s.Description))
			}
		}
	}
	if len(seen) != 3 {
		t.Errorf("%d apis, want 3", len(seen))
	}
}

func TestParsePGLogGroupsEachStatementsDurationsByDatabaseAndSource(t *testing.T) {
	t.Parallel()
	const log = `2026-12-05 07:01:00.001 UTC [101] postgres@keenauth_bench_ab LOG:  duration: 0.100 ms  parse <unnamed>: SELECT * FROM plans WHERE id = $1
2026-12-05 07:01:00.002 UTC [101] postgres@keenauth_bench_ab LOG:  duration: 0.200 ms  bind <unnamed>: SELECT * FROM plans WHERE id = $1
2026-12-05 07:01:00.003 UTC [101] postgres@keenauth_bench_ab LOG:  duration: 1.500 ms  execute <unnamed>: SELECT * FROM plans WHERE id = $1
2026-12-05 07:01:00.004 UTC [102] postgres@keenauth_bench_ab LOG:  duration: 2.500 ms  execute <unnamed>: SELECT *
	FROM plans   WHERE id = $1
2026-12-05 07:01:00.005 UTC [102] postgres@keenauth_bench_ab LOG:  duration: 0.300 ms  statement: DELETE FROM t WHERE n IN (1, 2, 3) AND s = 'it''s'
2026-12-05 07:01:00.006 UTC [103] postgres@keenauth_bench_ab LOG:  duration: 4.000 ms  execute stmt_1: INSERT INTO resources VALUES ($1, $2)
2026-12-05 07:01:00.007 UTC [104] postgres@other LOG:  duration: 9.000 ms  statement: SELECT 1
2026-12-05 07:01:00.008 UTC [101] postgres@keenauth_bench_ab LOG:  connection authorized
`
	got := parsePGLog(strings.NewReader(log), "keenauth_bench_ab", map[int]bool{103: true})
	want := []pgStatement{
		{Source: "bench", Phase: "execute", Statement: "INSERT INTO resources VALUES (?, …)", Count: 1, TotalMS: 4, MeanMS: 4},
		{Source: "server", Phase: "execute", Statement: "SELECT * FROM plans WHERE id = ?", Count: 2, TotalMS: 4, MeanMS: 2},
		{Source: "server", Phase: "statement", Statement: "DELETE FROM t WHERE n IN (?, …) AND s = ?", Count: 1, TotalMS: 0.3, MeanMS: 0.3},
		{Source: "server", Phase: "bind", Statement: "SELECT * FROM plans WHERE id = ?", Count: 1, TotalMS: 0.2, MeanMS: 0.2},
		{Source: "server", Phase: "parse", Statement: "SELECT * FROM plans WHERE id = ?", Count: 1, TotalMS: 0.1, MeanMS: 0.1},
	}
	if len(got) != len(want) {
		t.Fatalf("parsePGLog = %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Source != w.Source || g.Phase != w.Phase || g.Statement != w.Statement || g.Count != w.Count ||
			math.Abs(g.TotalMS-w.TotalMS) > 1e-9 || math.Abs(g.MeanMS-w.MeanMS) > 1e-9 {
			t.Errorf("statement %d = %+v, want %+v", i, g, w)
		}
	}
	if all := parsePGLog(strings.NewReader(log), "", nil); len(all) != 6 || all[0].TotalMS != 9 || all[1].Source != "server" {
		t.Errorf("without a database, every line counts: %+v", all)
	}
}

func TestParseGCTraceReadsTheLiveHeapAndTheGoalOfEachCollection(t *testing.T) {
	t.Parallel()
	const log = `{"level":"INFO","msg":"request"}
gc 7 @1.204s 1%: 0.023+2.1+0.004 ms clock, 0.047+0.3/1.0/0+0.008 ms cpu, 40->44->21 MB, 42 MB goal, 0 MB stacks, 0 MB globals, 2 P
gc 8 @1.900s 1%: 0.020+3.0+0.005 ms clock, 0.040+0.2/1.1/0+0.010 ms cpu, 52->60->38 MB, 55 MB goal, 0 MB stacks, 0 MB globals, 2 P
gc 9 @2.500s 1%: 0.020+3.0+0.005 ms clock, 0.040+0.2/1.1/0+0.010 ms cpu, 70->71->30 MB, 77 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)
`
	want := gcSummary{Collections: 3, MaxLiveMB: 38, MaxHeapMB: 71, MaxGoalMB: 77, LiveMB: []int{21, 38, 30}}
	if got := parseGCTrace(log); !reflect.DeepEqual(got, want) {
		t.Errorf("parseGCTrace = %+v, want %+v", got, want)
	}
	if got := parseGCTrace(`{"msg":"no collection"}`); !reflect.DeepEqual(got, gcSummary{}) {
		t.Errorf("no gctrace line: %+v", got)
	}
}

// TestServerEnvIsGivenAfterTheBenchsOwnVariables: -server-env is
// repeatable, takes NAME=VALUE only, and reaches every keenauthd after the
// bench's own settings, so that it overrides them.
func TestServerEnvIsGivenAfterTheBenchsOwnVariables(t *testing.T) {
	o, err := parseFlags([]string{"-server-env", "KEENAUTHD_PLAN_CACHE_MIB=0", "-server-env", "KEENAUTHD_INFLIGHT_LIMIT=3"})
	if err != nil {
		t.Fatal(err)
	}
	if got := []string(o.serverEnv); len(got) != 2 || got[0] != "KEENAUTHD_PLAN_CACHE_MIB=0" || got[1] != "KEENAUTHD_INFLIGHT_LIMIT=3" {
		t.Fatalf("server env %q", got)
	}
	env := append(serverEnv("db", "redis", "l", "d"), o.serverEnv...)
	last := ""
	for _, kv := range env {
		if strings.HasPrefix(kv, "KEENAUTHD_INFLIGHT_LIMIT=") {
			last = kv
		}
	}
	if last != "KEENAUTHD_INFLIGHT_LIMIT=3" {
		t.Errorf("the last KEENAUTHD_INFLIGHT_LIMIT given is %q", last)
	}
	for _, bad := range []string{"NOEQUALS", "=1"} {
		if _, err := parseFlags([]string{"-server-env", bad}); err == nil {
			t.Errorf("-server-env %q accepted", bad)
		}
	}
}

// TestTracedRowDividesByTheAlternatedApplies: P1T's ratio is the traced
// apply over the untraced applies made beside it when the traced row has
// them, and over the untraced run's figure otherwise (P2T, a rate: the
// untraced over the traced); only the apply of 1,000 changes and P2's
// throughput are checked against the target.
func TestTracedRowDividesByTheAlternatedApplies(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name          string
		traced, plain row
		bound, ratio  float64
		boundOf       string
		checked, pass bool
	}{
		{"P1 of 1,000 beside untraced applies",
			row{ID: "P1", Scenario: "apply", Figure: 69, Unit: "ms", Details: map[string]any{"changes": 1000, "untraced_apply_median_ms": 60.0}},
			row{ID: "P1", Scenario: "apply", Figure: 50, Unit: "ms"},
			60, 69.0 / 60, "(untraced, alternated)", true, true},
		{"P1 of 1,000 without them",
			row{ID: "P1", Scenario: "apply", Figure: 69, Unit: "ms", Details: map[string]any{"changes": 1000}},
			row{ID: "P1", Scenario: "apply", Figure: 50, Unit: "ms"},
			50, 69.0 / 50, "(untraced)", true, false},
		{"P1 of 10, not checked",
			row{ID: "P1", Scenario: "apply", Figure: 6, Unit: "ms", Details: map[string]any{"changes": 10, "untraced_apply_median_ms": 4.0}},
			row{ID: "P1", Scenario: "apply", Figure: 5, Unit: "ms"},
			4, 1.5, "(untraced, alternated)", false, false},
		{"P2's throughput",
			row{ID: "P2", Scenario: "pairs", Figure: 250, Unit: "/s", Details: map[string]any{}},
			row{ID: "P2", Scenario: "pairs", Figure: 280, Unit: "/s"},
			280, 280.0 / 250, "(untraced)", true, true},
		{"P2's throughput in turns with the untraced server",
			row{ID: "P2", Scenario: "pairs", Figure: 250, Unit: "/s", Bound: 300, BoundOf: "(untraced, alternated)", Details: map[string]any{}},
			row{ID: "P2", Scenario: "pairs", Figure: 280, Unit: "/s", Bound: 500, BoundOf: "(bare SQL)"},
			300, 300.0 / 250, "(untraced, alternated)", true, false},
		{"P2's p99 in turns with the untraced server, not checked",
			row{ID: "P2", Scenario: "p99", Figure: 90, Unit: "ms", Bound: 60, BoundOf: "(untraced, alternated)", Details: map[string]any{}},
			row{ID: "P2", Scenario: "p99", Figure: 80, Unit: "ms", Bound: 40, BoundOf: "(bare SQL apply tx)"},
			60, 1.5, "(untraced, alternated)", false, false},
	} {
		r := tracedRow(c.traced, c.plain)
		if r.ID != c.traced.ID+"T" || r.Bound != c.bound || math.Abs(r.Ratio-c.ratio) > 1e-9 || r.BoundOf != c.boundOf || r.Checked != c.checked || r.Pass != c.pass {
			t.Errorf("%s: %s bound %v %s ratio %v checked %v pass %v; want bound %v %s ratio %v checked %v pass %v", c.name,
				r.ID, r.Bound, r.BoundOf, r.Ratio, r.Checked, r.Pass, c.bound, c.boundOf, c.ratio, c.checked, c.pass)
		}
		if r.Details["untraced_row_figure"] != c.plain.Figure {
			t.Errorf("%s: the untraced run's figure is not in the details: %v", c.name, r.Details)
		}
		// The ratio of the two rows' ratios to their bounds is given
		// only where both bounds are of one kind.
		if _, ok := r.Details["ratio_of_bound_ratios"]; ok != (c.traced.Bound > 0 && c.traced.BoundOf == c.plain.BoundOf) {
			t.Errorf("%s: ratio_of_bound_ratios given: %v", c.name, ok)
		}
	}
}

// takeTurns alternates the two loops turn by turn, each turn starting with
// the loop that went second in the turn before, and adds up each loop's
// pairs, time, latencies and CPU (read with its own pid) over its turns.
func TestTakeTurnsAlternatesAndAddsUpEachSide(t *testing.T) {
	t.Parallel()
	var calls []string
	side := func(name string, pid, pairs int) *p2Side {
		return &p2Side{pid: pid, loop: func(_ context.Context, d time.Duration, turn int) (loopResult, error) {
			calls = append(calls, fmt.Sprintf("%s%d:%v", name, turn, d))
			return loopResult{n: pairs, elapsed: time.Second, rate: float64(pairs), applies: []time.Duration{time.Duration(turn)}}, nil
		}}
	}
	for _, c := range []struct {
		sides []*p2Side
		want  string
	}{
		{[]*p2Side{side("a", 1, 300), side("b", 2, 500)}, "a0:5s b0:5s b1:5s a1:5s a2:5s b2:5s b3:5s a3:5s"},
		// P2's three loops: the server's, the bound's, the pair reference's.
		{[]*p2Side{side("a", 1, 300), side("b", 2, 500), side("c", 3, 700)}, "a0:5s b0:5s c0:5s c1:5s b1:5s a1:5s a2:5s b2:5s c2:5s c3:5s b3:5s a3:5s"},
	} {
		calls = nil
		// Each read of a pid's CPU finds 10 ms more for it than the last.
		used := map[int]time.Duration{}
		sample := func(pid int) cpuSample {
			used[pid] += 10 * time.Millisecond
			return cpuSample{groups: map[string]time.Duration{"keenauthd": used[pid]}, busy: used[pid], total: 2 * used[pid]}
		}
		if err := takeTurns(context.Background(), 20*time.Second, 4, c.sides, sample); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(calls, " "); got != c.want {
			t.Errorf("turns %s, want %s", got, c.want)
		}
		for i, s := range c.sides {
			pairs := 300 + 200*i
			if s.res.n != 4*pairs || s.res.elapsed != 4*time.Second || s.res.rate != float64(pairs) ||
				!reflect.DeepEqual(s.res.applies, []time.Duration{0, 1, 2, 3}) || !reflect.DeepEqual(s.rates, []float64{float64(pairs), float64(pairs), float64(pairs), float64(pairs)}) {
				t.Errorf("pid %d: %+v, rates %v", s.pid, s.res, s.rates)
			}
			// Four turns of 10 ms each: 40 ms of CPU, 1 ms for each 100 pairs.
			if u := s.cpu.use(s.res.n); math.Abs(u.PerOp["keenauthd"]-40.0/float64(4*pairs)) > 1e-9 || u.BusyFrac != 0.5 {
				t.Errorf("pid %d: CPU %+v", s.pid, u)
			}
		}
	}
}

// interleaved warms each sample up first, then takes n of each in turns
// of block calls, each turn starting with the next sample; the warm-ups
// are not among the durations returned.
func TestInterleavedTakesTurnsAfterTheWarmUp(t *testing.T) {
	t.Parallel()
	var calls []string
	sample := func(name string) func() (time.Duration, error) {
		i := 0
		return func() (time.Duration, error) {
			calls = append(calls, name)
			i++
			return time.Duration(i), nil
		}
	}
	got, err := interleaved(1, 5, 2, sample("a"), sample("b"), sample("c"))
	if err != nil {
		t.Fatal(err)
	}
	want := "a b c | a a b b c c | b b c c a a | c a b"
	if s := strings.Join(calls[:3], " ") + " | " + strings.Join(calls[3:9], " ") + " | " + strings.Join(calls[9:15], " ") + " | " + strings.Join(calls[15:], " "); s != want {
		t.Errorf("calls %s, want %s", s, want)
	}
	for i, d := range got {
		if !reflect.DeepEqual(d, []time.Duration{2, 3, 4, 5, 6}) {
			t.Errorf("sample %d: %v, want the five after its warm-up", i, d)
		}
	}
}

// pageFaultCost maps, writes and unmaps its memory without error, and a
// page's first write takes some time (a zero would be a write the
// compiler or the kernel left out).
func TestPageFaultCostWritesEveryPageOfFreshMemory(t *testing.T) {
	d, err := pageFaultCost()
	if err != nil {
		t.Fatal(err)
	}
	if d <= 0 {
		t.Errorf("a page's first write took %v", d)
	}
}

// api.do reads each answer into a buffer it keeps for the next one, and
// copies the answer out: a reply's body stays as it was read after the
// answers that follow it, however many requests share the buffers.
func TestAnswersReadIntoKeptBuffersAreCopiedOut(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Write(bytes.Repeat([]byte(r.URL.Query().Get("c")), n))
	}))
	defer srv.Close()
	a := newAPI(srv.URL, 2)
	var replies []reply
	for i, c := range []string{"a", "b", "c", "d", "e"} {
		n := 70_000 >> i
		r, err := a.do(context.Background(), http.MethodGet, fmt.Sprintf("/?c=%s&n=%d", c, n), "", nil, nil)
		if err != nil || r.status != http.StatusOK {
			t.Fatal(r.status, err)
		}
		replies = append(replies, r)
	}
	for i, c := range []string{"a", "b", "c", "d", "e"} {
		if want := bytes.Repeat([]byte(c), 70_000>>i); !bytes.Equal(replies[i].body, want) {
			t.Errorf("reply %d: %d bytes %.10q…, want %d of %q", i, len(replies[i].body), replies[i].body, len(want), c)
		}
	}
	if len(a.bodies) == 0 {
		t.Error("no buffer was kept for the next answer")
	}
}
