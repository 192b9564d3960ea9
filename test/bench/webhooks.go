package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// p12Endpoints is how many enabled webhook endpoints P12's environments
// hold; p12Reps how many applies of each kind it times.
const (
	p12Endpoints = 3
	p12Changes   = 10
)

// p12 — the apply of P1 (10 creates of ~600-byte api specs) in environments
// with 3 enabled webhook endpoints subscribed to every event, against the
// same apply in environments without: the outbox rows the trigger writes
// in the apply's transaction are its whole cost (the deliveries are posted
// later, by the dispatcher; the endpoints' host does not resolve, so every
// attempt fails at once and is rescheduled, and nothing is received). The
// two kinds alternate, so that drift weighs on both alike.
func (b *bench) p12(ctx context.Context) error {
	reps := 4 * b.o.p1Reps
	envs, err := b.srv.newEnvs(ctx, "p12", reps*2)
	if err != nil {
		return err
	}
	body := apisDocument(keyedSpecs("r", p12Changes, 0))
	for i := 0; i < reps; i++ {
		for range p12Endpoints {
			ep, _ := json.Marshal(map[string]any{"url": "https://hooks.keenauth-bench.invalid/hook", "events": []string{"*"}})
			r, err := b.api.do(ctx, http.MethodPost, "/v1/webhook-endpoints", envs[i*2].Secret, ep, nil)
			if err != nil {
				return err
			}
			if r.status != http.StatusCreated {
				return fmt.Errorf("create endpoint: %d %s", r.status, clip(r.body))
			}
		}
	}
	var with, without []time.Duration
	for i := range reps {
		run := func(ek envKey, into *[]time.Duration) error {
			took, err := b.api.appliedIn(ctx, ek, body)
			if err != nil {
				return err
			}
			*into = append(*into, took)
			return nil
		}
		first, second := func() error { return run(envs[i*2], &with) }, func() error { return run(envs[i*2+1], &without) }
		if i%2 == 1 {
			first, second = second, first
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
	}
	fig, bnd := median(with), median(without)
	ratio := fig.Seconds() / bnd.Seconds()
	b.add(row{ID: "P12", Scenario: fmt.Sprintf("apply of %d changes with %d webhook endpoints, median of %d", p12Changes, p12Endpoints, reps),
		Figure: ms(fig), Unit: "ms", Bound: ms(bnd), BoundOf: "(same apply, no endpoint)", Ratio: ratio, Target: "ratio ≤ 1.1",
		Checked: true, Pass: ratio <= 1.1,
		Details: map[string]any{"with_ms": msList(with), "without_ms": msList(without), "endpoints": p12Endpoints}})
	return nil
}
