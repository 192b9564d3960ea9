package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// internalToken is the bench server's KEENAUTHD_INTERNAL_TOKEN.
const internalToken = "bench-internal-token"

// p11 — plan creation of the 1,000-create document of P8 in an
// environment with 50 guardrail rules, against the same in an environment
// without rules, alternating which runs first (≤ 1.1 ×, §18). The rules
// are evaluated for every change and none catches one, so that both
// plans are alike: the figure is the rules' evaluation alone (see
// benchRules).
func (b *bench) p11(ctx context.Context) error {
	// 40 of each (8 in -quick): a plan creation of 1,000 creates varies by
	// ±10 ms from one to the next with where the collections fall, more
	// than the rules cost; a median of 10 moved P11 from 0.97 to 1.17
	// between two runs of one tree.
	reps := b.o.p1Reps * 8
	envs, err := b.srv.newEnvs(ctx, "rules", 2)
	if err != nil {
		return err
	}
	plain, ruled := envs[0], envs[1]
	b.p11Env = ruled
	rules := benchRules(50)
	body, _ := json.Marshal(map[string]any{"rules": rules})
	r, err := b.api.do(ctx, http.MethodPut, "/internal/v1/environments/"+ruled.EnvID+"/policies", internalToken, body, nil)
	if err != nil {
		return err
	}
	if r.status != http.StatusOK {
		return fmt.Errorf("put rules: %d %s", r.status, clip(r.body))
	}
	creates := apisDocument(keyedSpecs("r", 1000, 0))
	var withRules, without, cpuRules, cpuPlain []time.Duration
	// Each plan's time, and the server's CPU time while it made it (its
	// threads' run time: the requests run one at a time, so it is the
	// plan's, give or take the server's background polls), which the
	// load of the machine changes less than the time.
	plan := func(ek envKey, into, cpu *[]time.Duration) func() error {
		return func() error {
			before, err := b.srv.cpuTime()
			if err != nil {
				return err
			}
			p, r, err := b.api.plan(ctx, ek, creates)
			if err == nil && p.Summary.Create != 1000 {
				err = fmt.Errorf("plan of %d creates, want 1,000", p.Summary.Create)
			}
			after, cerr := b.srv.cpuTime()
			*into, *cpu = append(*into, r.took), append(*cpu, after-before)
			return errors.Join(err, cerr)
		}
	}
	// The first plan of the ruled environment compiles its rules: it is
	// not measured, as a server that has seen the policies once.
	if err := plan(ruled, new([]time.Duration), new([]time.Duration))(); err != nil {
		return err
	}
	if err := alternate(reps, plan(ruled, &withRules, &cpuRules), plan(plain, &without, &cpuPlain)); err != nil {
		return err
	}
	// The ratio is the median of the ratios of the pairs (each plan under
	// the rules beside the plan without them that ran next to it), not the
	// ratio of the two medians: the machine can slow both by half for a
	// stretch of the run, and the two medians then fall on either side of
	// it (one run: 79.2 / 56.4 ms = 1.40 for a median pair ratio of 1.00,
	// and server CPU 1.02 ×).
	fig, bnd := median(withRules), median(without)
	pairs := make([]float64, len(withRules))
	for i := range withRules {
		pairs[i] = withRules[i].Seconds() / without[i].Seconds()
	}
	ratio := medianFloat(pairs)
	b.add(row{ID: "P11", Scenario: fmt.Sprintf("plan creation of 1,000 creates under 50 rules, median of %d", reps), Figure: ms(fig), Unit: "ms",
		Bound: ms(bnd), BoundOf: "(the same without rules; ratio: the median pair's)", Ratio: ratio, Target: "≤ 1.1 × without rules", Checked: true, Pass: ratio <= 1.1,
		Details: map[string]any{"ratio_of_medians": fig.Seconds() / bnd.Seconds(), "rules_ms": msList(withRules), "plain_ms": msList(without),
			"server_cpu_rules_ms": msList(cpuRules), "server_cpu_plain_ms": msList(cpuPlain),
			"server_cpu_ratio": median(cpuRules).Seconds() / median(cpuPlain).Seconds()}})
	fmt.Fprintf(b.out, "  P11 the server's CPU per plan (median): %.1f ms under the rules, %.1f ms without: %.2f ×\n",
		ms(median(cpuRules)), ms(median(cpuPlain)), median(cpuRules).Seconds()/median(cpuPlain).Seconds())
	return nil
}

// benchRules are 50 warn rules of which none catches a change of P11's
// document: as a tenant's security team writes them, each about one kind
// (six about apis: the rules every change of P11 is evaluated against),
// and two about any change, which the plan's creates or its environment
// rule out before evaluation.
func benchRules(n int) []map[string]any {
	byKind := map[string][]string{
		"api": {
			"new.token_lifetime_seconds > 86400",
			"change.action == 'delete' && old.display_name.startsWith('Prod')",
			"new.scopes.exists(s, s.value.startsWith('admin:'))",
			"!new.identifier.startsWith('https://')",
			"old != null && new != null && new.token_lifetime_seconds > old.token_lifetime_seconds * 2",
			"size(new.scopes) > 100",
		},
		"identity_settings":    {"new.mfa != 'required'", "new.password_policy.min_length < 12", "!new.password_policy.require_digits"},
		"connection":           {"change.action == 'delete' && old.display_name.startsWith('Prod')", "new.type == 'social' && new.active", "new.type == 'enterprise' && !new.oidc.issuer.startsWith('https://')"},
		"application":          {"new.callback_urls.exists(u, u.startsWith('http://'))", "new.type == 'spa' && size(new.api_grants) > 3", "change.action == 'delete'"},
		"role":                 {"new.permissions.exists(p, p.scope.startsWith('admin:'))", "change.action == 'delete'"},
		"environment_settings": {"new.session_lifetime_hours > 720"},
		"attack_protection":    {"!new.brute_force.enabled"},
		"branding":             {"has(new.logo_url) && !new.logo_url.startsWith('https://')"},
	}
	kinds := []string{"identity_settings", "connection", "application", "role", "environment_settings", "attack_protection", "branding", "application_branding"}
	var whens []string
	for _, w := range byKind["api"] {
		whens = append(whens, "change.kind == 'api' && "+w)
	}
	whens = append(whens, "environment.name == 'production' && change.action == 'delete'",
		"change.action == 'delete' && change.key.startsWith('prod-')")
	for i := 0; len(whens) < n; i++ {
		k := kinds[i%len(kinds)]
		ws := byKind[k]
		w := fmt.Sprintf("change.key.startsWith('legacy-%d')", i)
		if len(ws) > 0 {
			w = ws[(i/len(kinds))%len(ws)]
		}
		whens = append(whens, fmt.Sprintf("change.kind == '%s' && %s", k, w))
	}
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"name": fmt.Sprintf("rule-%02d", i), "when": whens[i], "enforcement": "warn", "message": fmt.Sprintf("Rule %d.", i)}
	}
	return out
}

// medianFloat is the median of xs (the mean of the middle two of an even
// count), leaving xs in order.
func medianFloat(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
