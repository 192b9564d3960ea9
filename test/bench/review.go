package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// review — the reviewing endpoints of §14 against the endpoint each is
// bounded by, on one environment of 1,000 apis, alternating which runs
// first:
//
//   - P8: a preview (POST /v1/config-plans?preview=true) of a 1,000-create
//     document against plan creation of the same document (≤ 1.0 ×);
//   - P9: a rebase of a conflicted 1,000-update plan against plan creation
//     of the same document (≤ 1.2 ×);
//   - P10: the diff of a revision of 1,000 resources against the export of
//     the same environment (≤ 1.0 ×).
func (b *bench) review(ctx context.Context) error {
	reps := b.o.p1Reps * 2
	envs, err := b.srv.newEnvs(ctx, "review", 2)
	if err != nil {
		return err
	}
	fresh, ek := envs[0], envs[1]
	const n = 1000

	// P8, on an empty environment: nothing is applied, so every plan and
	// preview is of the same 1,000 creates.
	creates := apisDocument(keyedSpecs("r", n, 0))
	var previews, plans []time.Duration
	preview := func() error {
		r, err := b.api.do(ctx, http.MethodPost, "/v1/config-plans?preview=true", fresh.Secret, creates, nil)
		if err != nil {
			return err
		}
		var p planned
		if r.status != http.StatusOK || json.Unmarshal(r.body, &p) != nil || p.Status != "preview" || p.Summary.Create != n {
			return fmt.Errorf("preview: %d %s", r.status, clip(r.body))
		}
		previews = append(previews, r.took)
		return nil
	}
	create := func() error {
		_, r, err := b.api.plan(ctx, fresh, creates)
		plans = append(plans, r.took)
		return err
	}
	if err := alternate(reps, preview, create); err != nil {
		return err
	}
	b.review8 = reviewWork{env: fresh, body: creates}
	fig, bnd := median(previews), median(plans)
	ratio := fig.Seconds() / bnd.Seconds()
	b.add(row{ID: "P8", Scenario: fmt.Sprintf("preview of a 1,000-resource document, median of %d", reps), Figure: ms(fig), Unit: "ms",
		Bound: ms(bnd), BoundOf: "(plan creation)", Ratio: ratio, Target: "≤ 1.0 × plan creation", Checked: true, Pass: ratio <= 1.0,
		Details: map[string]any{"preview_ms": msList(previews), "plan_ms": msList(plans)}})

	// The environment of P9 and P10: 1,000 apis, then all of them updated,
	// whose revision holds the 1,000 specs before.
	if _, err := b.api.planAndApply(ctx, ek, creates); err != nil {
		return err
	}
	up, _, err := b.api.plan(ctx, ek, apisDocument(keyedSpecs("r", n, 1)))
	if err != nil {
		return err
	}
	ar, err := b.api.apply(ctx, ek, up.ID, "")
	if err != nil {
		return err
	}
	var updated planned
	if err := json.Unmarshal(ar.body, &updated); err != nil || updated.RevisionID == nil {
		return fmt.Errorf("the update of %d apis kept no revision", n)
	}
	// A plan of 1,000 updates, made stale by one api changing, then
	// conflicted by an apply.
	again := apisDocument(keyedSpecs("r", n, 2))
	stale, _, err := b.api.plan(ctx, ek, again)
	if err != nil {
		return err
	}
	if _, err := b.api.planAndApply(ctx, ek, apisDocument(map[string]map[string]any{"r-00000": smallSpec("r-00000", 3)})); err != nil {
		return err
	}
	if r, err := b.api.do(ctx, http.MethodPost, "/v1/config-plans/"+stale.ID+":apply", ek.Secret, []byte("{}"), nil); err != nil || r.status != http.StatusConflict {
		return fmt.Errorf("apply of the stale plan: %v %d %s, want 409", err, r.status, clip(r.body))
	}
	var rebases []time.Duration
	plans = nil
	rebase := func() error {
		r, err := b.api.do(ctx, http.MethodPost, "/v1/config-plans/"+stale.ID+":rebase", ek.Secret, []byte("{}"), nil)
		if err != nil {
			return err
		}
		var p struct {
			planned
			Moved []json.RawMessage `json:"moved"`
		}
		if r.status != http.StatusCreated || json.Unmarshal(r.body, &p) != nil || p.Summary.Update != n || len(p.Moved) != 1 {
			return fmt.Errorf("rebase: %d %s", r.status, clip(r.body))
		}
		rebases = append(rebases, r.took)
		return nil
	}
	createAgain := func() error {
		_, r, err := b.api.plan(ctx, ek, again)
		plans = append(plans, r.took)
		return err
	}
	if err := alternate(reps, rebase, createAgain); err != nil {
		return err
	}
	b.review9 = reviewWork{env: ek, id: stale.ID}
	fig, bnd = median(rebases), median(plans)
	ratio = fig.Seconds() / bnd.Seconds()
	b.add(row{ID: "P9", Scenario: fmt.Sprintf("rebase of a conflicted 1,000-change plan, median of %d", reps), Figure: ms(fig), Unit: "ms",
		Bound: ms(bnd), BoundOf: "(plan creation)", Ratio: ratio, Target: "≤ 1.2 × plan creation", Checked: true, Pass: ratio <= 1.2,
		Details: map[string]any{"rebase_ms": msList(rebases), "plan_ms": msList(plans)}})

	// P10 takes three times the repetitions: a diff and an export take
	// 11–47 ms each on the slower machine kind, and the medians of 10 read
	// 0.75–1.35 over six runs of one tree (issue 34, sixth session).
	reps10 := 3 * reps
	var diffs, exports []time.Duration
	diff := func() error {
		r, err := b.api.do(ctx, http.MethodGet, "/v1/config-revisions/"+*updated.RevisionID+"/diff", ek.Secret, nil, nil)
		if err != nil {
			return err
		}
		var d struct {
			Resources []json.RawMessage `json:"resources"`
		}
		if r.status != http.StatusOK || json.Unmarshal(r.body, &d) != nil || len(d.Resources) != n {
			return fmt.Errorf("revision diff: %d %s", r.status, clip(r.body))
		}
		diffs = append(diffs, r.took)
		return nil
	}
	export := func() error {
		r, err := b.api.do(ctx, http.MethodGet, "/v1/config?types=api", ek.Secret, nil, nil)
		if err != nil {
			return err
		}
		if r.status != http.StatusOK {
			return fmt.Errorf("export: %d %s", r.status, clip(r.body))
		}
		exports = append(exports, r.took)
		return nil
	}
	if err := alternate(reps10, diff, export); err != nil {
		return err
	}
	b.review10 = reviewWork{env: ek, id: *updated.RevisionID}
	fig, bnd = median(diffs), median(exports)
	ratio = fig.Seconds() / bnd.Seconds()
	b.add(row{ID: "P10", Scenario: fmt.Sprintf("diff of a 1,000-resource revision, median of %d", reps10), Figure: ms(fig), Unit: "ms",
		Bound: ms(bnd), BoundOf: "(export of the apis)", Ratio: ratio, Target: "≤ 1.0 × the export", Checked: true, Pass: ratio <= 1.0,
		Details: map[string]any{"diff_ms": msList(diffs), "export_ms": msList(exports)}})
	return nil
}

// alternate runs a and b reps times each, swapping which goes first every
// time, so that drift of the machine weighs on both alike.
func alternate(reps int, a, b func() error) error {
	for i := range reps {
		first, second := a, b
		if i%2 == 1 {
			first, second = b, a
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
	}
	return nil
}

// reviewWork is what a profile of P8, P9 or P10 repeats.
type reviewWork struct {
	env  envKey
	body []byte // P8's document
	id   string // P9's source plan, P10's revision
}

// reviewProfile is the profile workload of P8, P9 or P10: the measured
// request, again and again.
func (b *bench) reviewProfile(id string) func(ctx context.Context) error {
	method, path, body, w := "", "", []byte(nil), reviewWork{}
	switch id {
	case "P8":
		w = b.review8
		method, path, body = http.MethodPost, "/v1/config-plans?preview=true", w.body
	case "P9":
		w = b.review9
		method, path, body = http.MethodPost, "/v1/config-plans/"+w.id+":rebase", []byte("{}")
	case "P10":
		w = b.review10
		method, path = http.MethodGet, "/v1/config-revisions/"+w.id+"/diff"
	}
	return func(ctx context.Context) error {
		for ctx.Err() == nil {
			if _, err := b.api.do(ctx, method, path, w.env.Secret, body, nil); err != nil {
				return err
			}
		}
		return nil
	}
}
