package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// sortedSpecs returns specs in key order with their canonical JSON.
func sortedSpecs(specs map[string]map[string]any) []keyedSpec {
	out := make([]keyedSpec, 0, len(specs))
	for k, s := range specs {
		out = append(out, keyedSpec{key: k, spec: canonicalJSON(s)})
	}
	slices.SortFunc(out, func(a, b keyedSpec) int {
		if a.key < b.key {
			return -1
		}
		if a.key > b.key {
			return 1
		}
		return 0
	})
	return out
}

// p1 — apply of one plan of 1, 10, 100 and 1,000 creates of ~600-byte api
// specs, each repetition in a fresh environment, against the same rows
// written by bare pgx in one transaction (in another fresh environment,
// for a plan made the same way). The plan creations give P4.
func (b *bench) p1(ctx context.Context) error {
	sizes := []int{1, 10, 100, 1000}
	if b.o.only["P4"] && !b.o.only["P1"] {
		sizes = []int{1000}
	}
	// The checked size, 1,000, takes three times the repetitions: its
	// figure and its bound are about 0.1 s each, and a median of 5 moved
	// by a third between two runs of one tree on two cores.
	repsOf := func(n int) int {
		if n == 1000 {
			return 3 * b.o.p1Reps
		}
		return b.o.p1Reps
	}
	total := 0
	for _, n := range sizes {
		total += repsOf(n)
	}
	// An environment for the server, one for the bound, and one for the
	// untraced server beside the traced one (b.beside).
	per := 2
	if b.beside != nil {
		per = 3
	}
	envs, err := b.srv.newEnvs(ctx, "p1", total*per)
	if err != nil {
		return err
	}
	base := 0 // the first environment pair of the size
	for _, n := range sizes {
		reps := repsOf(n)
		specs := keyedSpecs("r", n, 0)
		body, keyed := apisDocument(specs), sortedSpecs(specs)
		var applies, bounds, plans, besides []time.Duration
		for r := range reps {
			srvEnv, boundEnv := envs[(base+r)*per], envs[(base+r)*per+1]
			server := func() error {
				p, pr, err := b.api.plan(ctx, srvEnv, body)
				if err != nil {
					return err
				}
				if p.Summary.Create != n {
					return fmt.Errorf("plan of %d creates has summary %+v", n, p.Summary)
				}
				ar, err := b.api.apply(ctx, srvEnv, p.ID, "")
				if err != nil {
					return err
				}
				plans, applies = append(plans, pr.took), append(applies, ar.took)
				return nil
			}
			lower := func() error {
				p, _, err := b.api.plan(ctx, boundEnv, body)
				if err != nil {
					return err
				}
				d, err := b.bound.applyCreates(ctx, boundEnv, p.ID, keyed)
				bounds = append(bounds, d)
				return err
			}
			// Alternate which goes first, so that drift of the machine
			// weighs on both alike.
			steps := []func() error{server, lower}
			if r%2 == 1 {
				steps = []func() error{lower, server}
			}
			if b.beside != nil {
				besideEnv := envs[(base+r)*per+2]
				beside := func() error {
					took, err := b.beside.appliedIn(ctx, besideEnv, body)
					if err != nil {
						return err
					}
					besides = append(besides, took)
					return nil
				}
				// Next to the traced server's apply, before it or after it.
				if r%2 == 0 {
					steps = []func() error{beside, server, lower}
				} else {
					steps = []func() error{lower, server, beside}
				}
			}
			for _, step := range steps {
				if err := step(); err != nil {
					return err
				}
			}
		}
		base += reps
		fig, bnd := median(applies), median(bounds)
		ratio := fig.Seconds() / bnd.Seconds()
		r := row{ID: "P1", Scenario: fmt.Sprintf("apply of %d change(s), median of %d", n, reps), Figure: ms(fig), Unit: "ms",
			Bound: ms(bnd), BoundOf: "(pgx tx)", Ratio: ratio, Target: "—",
			Details: map[string]any{"changes": n, "apply_ms": msList(applies), "bound_ms": msList(bounds), "plan_ms": msList(plans),
				"document_bytes": len(body)}}
		if len(besides) > 0 {
			r.Details["untraced_apply_ms"] = msList(besides)
			r.Details["untraced_apply_median_ms"] = ms(median(besides))
		}
		// In the traced run (b.beside set) the targets are not checked:
		// its rows are P1T's figures (tracing's tracedRow).
		if n == 1000 {
			r.Target, r.Checked, r.Pass = "ratio ≤ 1.3", b.beside == nil, ratio <= 1.3
		}
		b.add(r)
		if n == 1000 {
			pm := median(plans)
			pr := pm.Seconds() / fig.Seconds()
			b.add(row{ID: "P4", Scenario: fmt.Sprintf("plan creation, 1,000-resource document, median of %d", reps), Figure: ms(pm), Unit: "ms",
				Bound: ms(fig), BoundOf: "(P1 apply)", Ratio: pr, Target: "≤ 1.0 × the apply", Checked: b.beside == nil, Pass: pr <= 1.0,
				Details: map[string]any{"plan_ms": msList(plans), "document_bytes": len(body)}})
		}
	}
	return nil
}

func msList(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d.Microseconds()) / 1000
	}
	return out
}

// p2Clients is the concurrency of P2: one client per environment.
const p2Clients = 16

// p2Turns is how many turns each loop of P2 takes. The server's loop and
// its bound's alternate turn by turn (A B, B A, A B, B A), so that the
// machine's drift weighs on both alike: run one after the other, the
// bound's loop read 3.71 and 4.15 ms of CPU a pair a minute apart (issue
// 34, 2026-12-06), for the same statements.
//
// The loops share twice p2Duration: 20 s each for the two, 13.3 s each
// when the pair reference takes turns beside them. The database P2 writes
// into slows the loops as it grows (its one api per environment updated
// hundreds of times a second; a bound's turn read 835 pairs a second first
// and 624 last), the bound more than the server, so a longer P2 would
// raise the server's ratio to the bound with no change to the server.
const p2Turns = 4

// p2 — 16 clients, each on its own environment, loop "create a plan that
// updates its one api, then apply it" for a fixed time. The figures are the
// pairs completed per second (= applies per second) and the latency of the
// apply request (p50, p99 over every apply of the loop). The bound runs the
// same loop as bare SQL: per pair, the plan's transaction (plan row and
// event) then the apply's (resource, generations, revision, log, plan,
// events), at the same concurrency for the same time, in turns with the
// server's (p2Turns). In the traced run (b.beside set) the untraced server
// takes the bound's turns instead: P2T divides by what it did then.
func (b *bench) p2(ctx context.Context) error {
	envs, err := b.srv.newEnvs(ctx, "p2", p2Clients)
	if err != nil {
		return err
	}
	for _, ek := range envs {
		if _, err := b.api.planAndApply(ctx, ek, apisDocument(map[string]map[string]any{"bench": smallSpec("bench", 0)})); err != nil {
			return err
		}
	}
	b.p2Envs = envs
	srv := &p2Side{pid: b.srv.pid(), loop: func(ctx context.Context, d time.Duration, turn int) (loopResult, error) {
		return b.p2Loop(ctx, b.api, envs, d, p2First(1, turn), nil)
	}}
	lower, boundOf := &p2Side{pid: b.srv.pid(), loop: func(ctx context.Context, d time.Duration, turn int) (loopResult, error) {
		return b.p2Bound(ctx, envs, d, turn)
	}}, "(bare SQL)"
	var ref *p2Side
	if b.beside != nil {
		lower, boundOf = &p2Side{pid: b.besidePID, loop: func(ctx context.Context, d time.Duration, turn int) (loopResult, error) {
			return b.p2Loop(ctx, b.beside, envs, d, p2First(4, turn), nil)
		}}, "(untraced, alternated)"
	} else {
		// The pair reference (pairref.go) takes its turns beside the two.
		pr, err := startPairReference(ctx, b.boundURL, envs)
		if err != nil {
			return err
		}
		defer func() {
			if b.plog != nil {
				_ = b.plog.noteBenchBackends(context.WithoutCancel(ctx))
			}
			pr.stop()
		}()
		client := newAPI(pr.base, 32)
		ref = &p2Side{pid: pr.pid(), loop: func(ctx context.Context, d time.Duration, turn int) (loopResult, error) {
			// The other loops changed each environment's api since.
			if err := resetPairReference(ctx, client); err != nil {
				return loopResult{}, err
			}
			return b.p2Loop(ctx, client, envs, d, p2First(6, turn), nil)
		}}
	}
	sides := []*p2Side{srv, lower}
	if ref != nil {
		sides = append(sides, ref)
	}
	// The CPU of each loop, by process (test/bench/cpu.go); a reading that
	// fails leaves the figures out, not the row.
	var cpuErr error
	sample := func(pid int) cpuSample {
		s, err := sampleCPU(pid, b.dbName)
		cpuErr = errors.Join(cpuErr, err)
		return s
	}
	each := 2 * b.o.p2Duration / time.Duration(len(sides))
	if err := takeTurns(ctx, each, p2Turns, sides, sample); err != nil {
		return err
	}
	ratio := srv.res.rate / lower.res.rate
	details := map[string]any{"pairs": srv.res.n, "bound_pairs": lower.res.n, "seconds": srv.res.elapsed.Seconds(), "bound_seconds": lower.res.elapsed.Seconds(),
		"turns": p2Turns, "rates": srv.rates, "bound_rates": lower.rates}
	if cpuErr == nil {
		srvCPU, boundCPU := srv.cpu.use(srv.res.n), lower.cpu.use(lower.res.n)
		details["cpu"], details["bound_cpu"] = srvCPU, boundCPU
		// With the cores busy through both loops, the throughputs stand
		// as the CPU per pair: its ratio is the ratio the loop could reach.
		if srvCPU.Total > 0 {
			details["cpu_ratio"] = boundCPU.Total / srvCPU.Total
		}
		other := "bound loop:          "
		if b.beside != nil {
			other = "untraced server loop:"
		}
		fmt.Fprintf(b.out, "  P2 CPU per pair, server loop:         %s\n  P2 CPU per pair, %s %s\n", srvCPU, other, boundCPU)
		if ref != nil {
			refCPU := ref.cpu.use(ref.res.n)
			details["reference_cpu"] = refCPU
			fmt.Fprintf(b.out, "  P2 CPU per pair, pair reference loop: %s (its server in the place of keenauthd)\n", refCPU)
		}
	} else {
		fmt.Fprintf(b.out, "  P2 CPU by process not read: %v\n", cpuErr)
	}
	// In the traced run, P2's targets are not checked: its rows are P2T's
	// figures (tracing's tracedRow).
	checked := b.beside == nil
	// The scenario does not name the loop's time (the details do), which
	// differs between the untraced run and the traced one (no reference):
	// tracing matches the two rows by it.
	b.add(row{ID: "P2", Scenario: fmt.Sprintf("%d clients × plan-then-apply: pairs (applies) per second", p2Clients),
		Figure: srv.res.rate, Unit: "/s", Bound: lower.res.rate, BoundOf: boundOf, Ratio: ratio, Target: "≥ 0.6 × bound", Checked: checked, Pass: ratio >= 0.6,
		Details: details})
	p50, p99 := percentile(srv.res.applies, 50), percentile(srv.res.applies, 99)
	bp50, bp99 := percentile(lower.res.applies, 50), percentile(lower.res.applies, 99)
	applyOf := "(bare SQL apply tx)"
	if b.beside != nil {
		applyOf = boundOf
	}
	b.add(row{ID: "P2", Scenario: "apply latency p50 under that load", Figure: ms(p50), Unit: "ms", Bound: ms(bp50), BoundOf: applyOf,
		Ratio: p50.Seconds() / bp50.Seconds(), Target: "—"})
	b.add(row{ID: "P2", Scenario: "apply latency p99 under that load", Figure: ms(p99), Unit: "ms", Bound: ms(bp99), BoundOf: applyOf,
		Ratio: p99.Seconds() / bp99.Seconds(), Target: "p99 ≤ 2 × bound p99", Checked: checked, Pass: p99 <= 2*bp99,
		Details: map[string]any{"samples": len(srv.res.applies), "plan_p50_ms": ms(percentile(srv.res.plans, 50)), "plan_p99_ms": ms(percentile(srv.res.plans, 99)),
			"apply_max_ms": ms(percentile(srv.res.applies, 100))}})
	if ref != nil {
		b.add(row{ID: "P2", Scenario: "the pair reference (bare net/http, the bound's writes): pairs per second", Figure: ref.res.rate, Unit: "/s",
			Bound: lower.res.rate, BoundOf: "(bare SQL)", Ratio: ref.res.rate / lower.res.rate, Target: "—",
			Details: map[string]any{"pairs": ref.res.n, "seconds": ref.res.elapsed.Seconds(), "rates": ref.rates,
				"apply_p50_ms": ms(percentile(ref.res.applies, 50)), "apply_p99_ms": ms(percentile(ref.res.applies, 99))}})
		b.add(row{ID: "P2", Scenario: "pairs per second beside the pair reference", Figure: srv.res.rate, Unit: "/s",
			Bound: ref.res.rate, BoundOf: "(HTTP + bare SQL)", Ratio: srv.res.rate / ref.res.rate, Target: "—"})
	}
	return nil
}

// p2Side is one of P2's two loops: what runs a turn of it, whose CPU is
// keenauthd's while it runs (pid), and what its turns did in all.
type p2Side struct {
	loop  func(ctx context.Context, d time.Duration, turn int) (loopResult, error)
	pid   int
	res   loopResult
	rates []float64 // each turn's pairs per second
	cpu   cpuSample // the CPU of its turns, added up (cpuSample.since)
}

// takeTurns runs each side for d, in turns of d/turns: the sides in their
// order, then in the reverse order, and so on (A B, B A, … for two). Each
// side's result is its turns' added up, its CPU what sample read before
// and after each of them (with the side's pid).
func takeTurns(ctx context.Context, d time.Duration, turns int, sides []*p2Side, sample func(pid int) cpuSample) error {
	for t := range turns {
		order := slices.Clone(sides)
		if t%2 == 1 {
			slices.Reverse(order)
		}
		for _, s := range order {
			before := sample(s.pid)
			r, err := s.loop(ctx, d/time.Duration(turns), t)
			if err != nil {
				return err
			}
			s.cpu = s.cpu.plus(sample(s.pid).since(before))
			s.res.add(r)
			s.rates = append(s.rates, r.rate)
		}
	}
	return nil
}

// loopResult is what a P2 loop measured.
type loopResult struct {
	n       int
	elapsed time.Duration
	rate    float64
	applies []time.Duration
	plans   []time.Duration
}

// add counts the pairs, time and latencies of another turn of the loop in r.
func (r *loopResult) add(o loopResult) {
	r.n += o.n
	r.elapsed += o.elapsed
	r.applies, r.plans = append(r.applies, o.applies...), append(r.plans, o.plans...)
	if r.elapsed > 0 {
		r.rate = float64(r.n) / r.elapsed.Seconds()
	}
}

// p2First is the number of the first spec a loop's turn writes: each loop
// (variant) and each of its turns has numbers of its own, so that a plan
// always changes the one api, whichever loop wrote it last: 1 the server's
// loop, 2 the bound's, 3 P13's, 4 the untraced server beside the traced
// one, 5 a profile's, 6 the pair reference's.
func p2First(variant, turn int) int {
	return variant*1_000_000 + turn*100_000
}

// p2Server runs the server's loop on envs for d; variant numbers the
// specs so that a second loop (a profile) still changes them.
func (b *bench) p2Server(ctx context.Context, envs []envKey, d time.Duration, variant int) (loopResult, error) {
	return b.p2Loop(ctx, b.api, envs, d, p2First(variant, 0), nil)
}

// p2Loop is P2's loop through client, its specs numbered from first;
// observe, when not nil, is told each pair's plan and when its plan and
// its apply requests returned (P13).
func (b *bench) p2Loop(ctx context.Context, client *api, envs []envKey, d time.Duration, first int,
	observe func(planID string, planned, applied time.Time)) (loopResult, error) {
	var mu sync.Mutex
	var res loopResult
	var errs []error
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for _, ek := range envs {
		wg.Go(func() {
			for v := first; time.Now().Before(deadline) && ctx.Err() == nil; v++ {
				p, pr, err := client.plan(ctx, ek, apisDocument(map[string]map[string]any{"bench": smallSpec("bench", v)}))
				plannedAt := time.Now()
				if err == nil && p.Summary.Update != 1 {
					err = fmt.Errorf("plan has summary %+v, want 1 update", p.Summary)
				}
				var ar reply
				if err == nil {
					ar, err = client.apply(ctx, ek, p.ID, "")
				}
				if err == nil && observe != nil {
					observe(p.ID, plannedAt, time.Now())
				}
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					res.n++
					res.applies, res.plans = append(res.applies, ar.took), append(res.plans, pr.took)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.rate = float64(res.n) / res.elapsed.Seconds()
	return res, errors.Join(errs...)
}

// p2Bound is a turn of P2's bound: the loop as bare SQL on envs for d.
func (b *bench) p2Bound(ctx context.Context, envs []envKey, d time.Duration, turn int) (loopResult, error) {
	var mu sync.Mutex
	var res loopResult
	var errs []error
	states := make([]pairState, len(envs))
	for i, ek := range envs {
		st, err := b.bound.resourceState(ctx, ek.EnvID, "bench")
		if err != nil {
			return res, err
		}
		states[i] = st
	}
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for i, ek := range envs {
		wg.Go(func() {
			st := &states[i]
			for v := p2First(2, turn); time.Now().Before(deadline) && ctx.Err() == nil; v++ {
				took, err := b.bound.planThenApply(ctx, ek, st, canonicalJSON(smallSpec("bench", v)))
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					res.n++
					res.applies = append(res.applies, took)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.rate = float64(res.n) / res.elapsed.Seconds()
	return res, errors.Join(errs...)
}

// p3 — the replay of an applied plan: the same Idempotency-Key and body,
// answered from the Redis record, one request at a time; against a bare
// go-redis GET of a value the size of the stored answer, and beside the
// replay reference; the three in turns (interleaved).
func (b *bench) p3(ctx context.Context) error {
	envs, err := b.srv.newEnvs(ctx, "p3", 1)
	if err != nil {
		return err
	}
	ek := envs[0]
	p, _, err := b.api.plan(ctx, ek, apisDocument(keyedSpecs("replay", 1, 0)))
	if err != nil {
		return err
	}
	const key = "bench-replay-0001"
	first, err := b.api.apply(ctx, ek, p.ID, key)
	if err != nil {
		return err
	}
	b.p3Env, b.p3Plan = ek, p.ID

	const rkey = "bench:replay-bound"
	if err := b.rdb.Set(ctx, rkey, first.body, time.Hour).Err(); err != nil {
		return err
	}
	ref, err := startReference(ctx, nil, replayRefArg, fmt.Sprintf("redis://%s/%d", b.o.redisAddr, b.o.redisDB), rkey)
	if err != nil {
		return err
	}
	defer ref.stop()
	replay := func() (time.Duration, error) { return b.replay(ctx, ek, p.ID, key) }
	get := func() (time.Duration, error) {
		start := time.Now()
		v, err := b.rdb.Get(ctx, rkey).Bytes()
		took := time.Since(start)
		if err != nil || len(v) != len(first.body) {
			return 0, fmt.Errorf("redis GET: %v (%d bytes)", err, len(v))
		}
		return took, nil
	}
	reference := referenceReplay(ctx, ref, ek.Secret, len(first.body))
	// The three are measured in turns of p3Block requests, so that a
	// slow stretch of the machine, which decides a p99, weighs on each
	// alike: measured one after the other, the GET's p50 read 11 µs in
	// one run and 60 µs in the next.
	n := b.o.p3Requests
	got, err := interleaved(n/10, n, p3Block, replay, get, reference)
	if err != nil {
		return err
	}
	replays, gets, refs := got[0], got[1], got[2]
	p50, p99 := percentile(replays, 50), percentile(replays, 99)
	g50, g99 := percentile(gets, 50), percentile(gets, 99)
	r50, r99 := percentile(refs, 50), percentile(refs, 99)
	b.add(row{ID: "P3", Scenario: fmt.Sprintf("idempotent replay p50, %d requests", n), Figure: us(p50), Unit: "µs", Bound: us(g50),
		BoundOf: "(Redis GET)", Ratio: p50.Seconds() / g50.Seconds(), Target: "—"})
	ratio := p99.Seconds() / g99.Seconds()
	b.add(row{ID: "P3", Scenario: fmt.Sprintf("idempotent replay p99, %d requests", n), Figure: us(p99), Unit: "µs", Bound: us(g99),
		BoundOf: "(Redis GET)", Ratio: ratio, Target: "p99 ≤ 1 ms and ≤ 5 × bound", Checked: true,
		Pass: p99 <= time.Millisecond && ratio <= 5,
		Details: map[string]any{"answer_bytes": len(first.body), "replay_max_us": us(percentile(replays, 100)), "get_max_us": us(percentile(gets, 100)),
			"reference_max_us": us(percentile(refs, 100))}})
	b.add(row{ID: "P3", Scenario: "replay p50 beside a bare net/http server answering with one Redis GET", Figure: us(p50), Unit: "µs", Bound: us(r50),
		BoundOf: "(HTTP + GET)", Ratio: p50.Seconds() / r50.Seconds(), Target: "—"})
	b.add(row{ID: "P3", Scenario: "replay p99 beside a bare net/http server answering with one Redis GET", Figure: us(p99), Unit: "µs", Bound: us(r99),
		BoundOf: "(HTTP + GET)", Ratio: p99.Seconds() / r99.Seconds(), Target: "—"})
	return nil
}

// p3Block is how many requests of one kind P3 sends in a turn.
const p3Block = 100

// interleaved calls each of sample warm times, then takes n samples of
// each in turns of block calls; the turns rotate which sample goes first.
// It returns the n durations of each, in the order of sample.
func interleaved(warm, n, block int, sample ...func() (time.Duration, error)) ([][]time.Duration, error) {
	out := make([][]time.Duration, len(sample))
	if len(sample) == 0 || block < 1 {
		return out, nil
	}
	for _, s := range sample {
		for range warm {
			if _, err := s(); err != nil {
				return nil, err
			}
		}
	}
	for turn := 0; len(out[0]) < n; turn++ {
		for j := range sample {
			k := (turn + j) % len(sample)
			for range min(block, n-len(out[k])) {
				d, err := sample[k]()
				if err != nil {
					return nil, err
				}
				out[k] = append(out[k], d)
			}
		}
	}
	return out, nil
}

// replay sends one replay of the apply of planID with key and returns its
// latency; it must be a 200 marked as replayed.
func (b *bench) replay(ctx context.Context, ek envKey, planID, key string) (time.Duration, error) {
	r, err := b.api.apply(ctx, ek, planID, key)
	if err != nil {
		return 0, err
	}
	if r.header.Get("Idempotent-Replayed") != "true" {
		return 0, errors.New("an apply with the same Idempotency-Key and body was not replayed")
	}
	return r.took, nil
}

// p5 — peak RSS of the server (VmHWM) while it plans and applies updates
// of resources with large specs whose revision is close to the 10 MiB
// limit. The resources are created first, in several plans; the peak is
// reset (clear_refs) just before the big plan.
func (b *bench) p5(ctx context.Context) error {
	envs, err := b.srv.newEnvs(ctx, "p5", 1)
	if err != nil {
		return err
	}
	ek := envs[0]
	one := len(canonicalJSON(bigSpec("big-00000", 0)))
	n := b.o.p5Revision / (one + 90) // + the revision's own members per resource
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("big-%05d", i)
	}
	// Creates carry their spec twice in the plan (spec and diff): batches of
	// about 3 MiB of specs keep each plan far below the limit.
	per := max(1, (3<<20)/one)
	for i := 0; i < n; i += per {
		specs := map[string]map[string]any{}
		for _, k := range keys[i:min(i+per, n)] {
			specs[k] = bigSpec(k, 0)
		}
		if _, err := b.api.planAndApply(ctx, ek, apisDocument(specs)); err != nil {
			return fmt.Errorf("creating the large resources: %w", err)
		}
	}
	specs := map[string]map[string]any{}
	for _, k := range keys {
		specs[k] = bigSpec(k, 1)
	}
	body := apisDocument(specs)
	b.p5Env, b.p5N = ek, n

	// The large plan and its apply go to a keenauthd of their own, started
	// now over the same database and Redis, so that the heap the earlier
	// scenarios left in the main server does not decide the peak. It logs
	// every collection (GODEBUG=gctrace=1): the live heap is read from them.
	fresh, err := startServer(ctx, b.bin, b.dbURL, b.redisURL, filepath.Join(b.tmp, "keenauthd-p5.log"), append([]string{"GODEBUG=gctrace=1"}, b.o.serverEnv...)...)
	if err != nil {
		return err
	}
	defer fresh.stop()
	a := newAPI(fresh.base, 4)
	if r, err := a.do(ctx, http.MethodGet, "/v1/config-plans?limit=1", ek.Secret, nil, nil); err != nil || r.status != http.StatusOK {
		return fmt.Errorf("the fresh server's first request: %v", err)
	}
	before, err := fresh.procStatus("VmRSS")
	if err != nil {
		return err
	}
	gcStart := fresh.logSize()
	resetErr := fresh.resetPeakRSS()
	p, pr, err := a.plan(ctx, ek, body)
	if err != nil {
		return err
	}
	if p.Summary.Update != n {
		return fmt.Errorf("the large plan has summary %+v, want %d updates", p.Summary, n)
	}
	peakPlan, err := fresh.procStatus("VmHWM")
	if err != nil {
		return err
	}
	if err := b.p5Heap(ctx, fresh, "plan"); err != nil {
		return err
	}
	gcApply := fresh.logSize()
	if resetErr == nil {
		resetErr = fresh.resetPeakRSS()
	}
	ar, err := a.apply(ctx, ek, p.ID, "")
	if err != nil {
		return err
	}
	peakApply, err := fresh.procStatus("VmHWM")
	if err != nil {
		return err
	}
	if err := b.p5Heap(ctx, fresh, "apply"); err != nil {
		return err
	}
	gcEnd := fresh.logSize()
	gcPlan, gcApplied := fresh.gcTrace(gcStart, gcApply), fresh.gcTrace(gcApply, gcEnd)
	var applied planned
	_ = json.Unmarshal(ar.body, &applied)
	revBytes := 0
	if applied.RevisionID != nil {
		rr, err := b.api.do(ctx, http.MethodGet, "/v1/config-revisions/"+*applied.RevisionID, ek.Secret, nil, nil)
		if err == nil && rr.status == http.StatusOK {
			revBytes = len(rr.body)
		}
	}
	peak := max(peakPlan, peakApply)
	planBytes := int64(len(pr.body))
	details := map[string]any{"resources": n, "spec_bytes": one, "document_bytes": len(body), "plan_bytes": planBytes,
		"revision_answer_bytes": revBytes, "rss_before_mib": mib(before), "peak_plan_creation_mib": mib(peakPlan),
		"peak_apply_mib": mib(peakApply), "plan_ms": ms(pr.took), "apply_ms": ms(ar.took), "fresh_process": true,
		"gc_plan_creation": gcPlan, "gc_apply": gcApplied}
	if resetErr != nil {
		details["peak_reset_failed"] = resetErr.Error()
	}
	fmt.Fprintf(b.out, "  P5 live heap after each collection (gctrace): plan creation %s; apply %s\n", gcPlan, gcApplied)
	b.add(row{ID: "P5", Scenario: fmt.Sprintf("peak RSS, plan+apply of %d updates, revision %.1f MiB, fresh process", n, mib(int64(revBytes))),
		Figure: mib(peak), Unit: "MiB", Bound: mib(planBytes), BoundOf: "(plan size)", Ratio: float64(peak) / float64(planBytes),
		Target: "≤ 128 MiB", Checked: true, Pass: peak <= 128<<20, Details: details})
	return nil
}

// p5Heap writes, with -p5-heap, the fresh server's heap profile after a
// phase: what was in use at the phase's last collection, which is what
// its heap goal doubled. It runs after the peak was read.
func (b *bench) p5Heap(ctx context.Context, s *server, phase string) error {
	if b.o.p5HeapDir == "" {
		return nil
	}
	if err := os.MkdirAll(b.o.p5HeapDir, 0o755); err != nil {
		return err
	}
	if err := s.fetchProfile(ctx, "/debug/pprof/heap", filepath.Join(b.o.p5HeapDir, "P5.heap."+phase+".pprof")); err != nil {
		return err
	}
	// The text form ends with the runtime's MemStats: the heap mapped
	// (HeapSys), returned to the system (HeapReleased) and the rest of
	// Sys, which the RSS is made of.
	return s.fetchProfile(ctx, "/debug/pprof/heap?debug=1", filepath.Join(b.o.p5HeapDir, "P5.heap."+phase+".txt"))
}

// bigSpec is an api spec of about 9.6 KiB: 40 scopes of 200-character
// descriptions. variant changes the display name only, so that the diff of
// an update is small and the plan and the revision are both about the
// size of the specs.
func bigSpec(key string, variant int) map[string]any {
	s := apiSpec(key, 40, 200, 0)
	s["display_name"] = fmt.Sprintf("Bench API %s v%d", key, variant)
	return s
}

// p6 — the apply of a 10-create plan in an environment holding 100 other
// apis and in one holding 10,000 (the same kind as the plan's: the apply
// must check the uniqueness of identifiers against them), both with 50
// revisions. Repetitions alternate between the two environments.
func (b *bench) p6(ctx context.Context) error {
	envs, err := b.srv.newEnvs(ctx, "p6", 2)
	if err != nil {
		return err
	}
	small, big := envs[0], envs[1]
	for _, e := range []struct {
		ek     envKey
		others int
	}{{small, 100}, {big, b.o.p6Others}} {
		if err := b.seed(ctx, e.ek, e.others, b.o.p6Revisions); err != nil {
			return err
		}
	}
	b.p6Big = big
	// PostgreSQL's autovacuum analyses a table after bulk changes; the
	// benchmark does it at once so the plans it measures are the ones a
	// settled database gets, not those of statistics from before the seeding.
	if _, err := b.bound.pool.Exec(ctx, "ANALYZE resources"); err != nil {
		return err
	}
	var smallS, bigS, smallPlan, bigPlan []time.Duration
	for r := range b.o.p6Reps {
		order := []envKey{small, big}
		if r%2 == 1 {
			order = []envKey{big, small}
		}
		for _, ek := range order {
			p, pr, err := b.api.plan(ctx, ek, apisDocument(keyedSpecs(fmt.Sprintf("m%d", r), 10, 0)))
			if err != nil {
				return err
			}
			ar, err := b.api.apply(ctx, ek, p.ID, "")
			if err != nil {
				return err
			}
			if ek == small {
				smallS, smallPlan = append(smallS, ar.took), append(smallPlan, pr.took)
			} else {
				bigS, bigPlan = append(bigS, ar.took), append(bigPlan, pr.took)
			}
		}
	}
	fig, bnd := median(bigS), median(smallS)
	ratio := fig.Seconds() / bnd.Seconds()
	b.add(row{ID: "P6", Scenario: fmt.Sprintf("apply of 10 creates beside %d apis vs 100, 50 revisions, median of %d", b.o.p6Others, b.o.p6Reps),
		Figure: ms(fig), Unit: "ms", Bound: ms(bnd), BoundOf: "(beside 100)", Ratio: ratio, Target: "ratio ≤ 1.3", Checked: true, Pass: ratio <= 1.3,
		Details: map[string]any{"apply_big_ms": msList(bigS), "apply_small_ms": msList(smallS),
			"plan_big_ms": msList(bigPlan), "plan_small_ms": msList(smallPlan)}})
	return nil
}

// seed fills an environment with others apis (plans of at most 1,000
// creates) and then 1-update applies until it holds revisions revisions.
func (b *bench) seed(ctx context.Context, ek envKey, others, revisions int) error {
	applied := 0
	for i := 0; i < others; i += 1000 {
		specs := map[string]map[string]any{}
		for j := i; j < min(i+1000, others); j++ {
			k := fmt.Sprintf("o-%05d", j)
			specs[k] = smallSpec(k, 0)
		}
		if _, err := b.api.planAndApply(ctx, ek, apisDocument(specs)); err != nil {
			return fmt.Errorf("seeding %d apis: %w", others, err)
		}
		applied++
	}
	for v := 1; applied < revisions; v++ {
		if _, err := b.api.planAndApply(ctx, ek, apisDocument(map[string]map[string]any{"o-00000": smallSpec("o-00000", v)})); err != nil {
			return fmt.Errorf("seeding revisions: %w", err)
		}
		applied++
	}
	return nil
}

// p7 — GET /v1/config-plans?limit=20 in an environment of 1,000 plans, one
// in ten of apis and the others of roles, with a key that reads apis only
// (config:read, apis:read: it sees the hundred api plans), against the same
// list with an all-permissions key (every plan). Repetitions alternate;
// medians of each.
func (b *bench) p7(ctx context.Context) error {
	envs, err := b.srv.newEnvs(ctx, "p7", 1)
	if err != nil {
		return err
	}
	ek := envs[0]
	var key struct{ ID, Secret string }
	if err := b.srv.cli(ctx, &key, "key", "create", "--env", ek.EnvID, "--permissions", "config:read,apis:read"); err != nil {
		return err
	}
	oneType := envKey{EnvID: ek.EnvID, KeyID: key.ID, Secret: key.Secret}
	n := b.o.p7Plans
	jobs := make(chan int)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for w := range errs {
		wg.Go(func() {
			for i := range jobs {
				if errs[w] != nil {
					continue
				}
				k := fmt.Sprintf("p-%05d", i)
				body := apisDocument(map[string]map[string]any{k: smallSpec(k, 0)})
				if i%10 != 0 {
					body, _ = json.Marshal(map[string]any{"config": map[string]any{"roles": map[string]any{
						k: map[string]any{"display_name": "Role " + k}}}})
				}
				_, _, errs[w] = b.api.plan(ctx, ek, body)
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("creating %d plans: %w", n, err)
	}
	list := func(k envKey) (time.Duration, error) {
		r, err := b.api.do(ctx, http.MethodGet, "/v1/config-plans?limit=20", k.Secret, nil, nil)
		if err != nil {
			return 0, err
		}
		if r.status != http.StatusOK {
			return 0, fmt.Errorf("list: %d %s", r.status, r.body)
		}
		var page struct {
			Data []struct {
				Types []string `json:"types"`
			} `json:"data"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil || len(page.Data) != 20 {
			return 0, fmt.Errorf("list: %d plans (%v), want 20", len(page.Data), err)
		}
		if k == oneType && slices.ContainsFunc(page.Data, func(p struct {
			Types []string `json:"types"`
		}) bool {
			return !slices.Equal(p.Types, []string{"api"})
		}) {
			return 0, errors.New("the apis-only key was shown a plan of another type")
		}
		return r.took, nil
	}
	var one, full []time.Duration
	for i := range 20 + b.o.p7Reps { // 20 warm-up pairs
		order := []envKey{oneType, ek}
		if i%2 == 1 {
			order = []envKey{ek, oneType}
		}
		for _, k := range order {
			d, err := list(k)
			if err != nil {
				return err
			}
			if i < 20 {
				continue
			}
			if k == oneType {
				one = append(one, d)
			} else {
				full = append(full, d)
			}
		}
	}
	fig, bnd := median(one), median(full)
	ratio := fig.Seconds() / bnd.Seconds()
	b.add(row{ID: "P7", Scenario: fmt.Sprintf("GET /v1/config-plans?limit=20 among %d plans, a key reading apis only (1 plan in 10), median of %d", n, b.o.p7Reps),
		Figure: ms(fig), Unit: "ms", Bound: ms(bnd), BoundOf: "(all-permissions key)", Ratio: ratio, Target: "ratio ≤ 2", Checked: true, Pass: ratio <= 2,
		Details: map[string]any{"one_type_p99_ms": ms(percentile(one, 99)), "full_p99_ms": ms(percentile(full, 99))}})
	b.p7Key = oneType
	return nil
}
