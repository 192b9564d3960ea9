package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// profile takes a CPU profile of the server (pprof on
// KEENAUTHD_DEBUG_LISTEN) while it runs again the work of a scenario that
// missed its target, and writes it to <dir>/<id>.pprof. For P5 it also
// writes the allocations since start before and after that work
// (<dir>/P5.allocs.base.pprof, <dir>/P5.allocs.pprof): read them with
// go tool pprof -sample_index=alloc_space -diff_base P5.allocs.base.pprof P5.allocs.pprof.
func (b *bench) profile(ctx context.Context, id string) error {
	if err := os.MkdirAll(b.o.profileDir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(b.o.profileDir, id+".pprof")
	if _, err := os.Stat(path); err == nil {
		return nil // one profile per scenario (P2 has two rows)
	}
	var work func(ctx context.Context) error
	switch id {
	case "P1":
		// Plans are made before the profile starts: it sees the applies.
		envs, err := b.srv.newEnvs(ctx, "prof-p1", 12)
		if err != nil {
			return err
		}
		var ids []string
		for _, ek := range envs {
			p, _, err := b.api.plan(ctx, ek, apisDocument(keyedSpecs("r", 1000, 0)))
			if err != nil {
				return err
			}
			ids = append(ids, p.ID)
		}
		work = func(ctx context.Context) error {
			for i, ek := range envs {
				if ctx.Err() != nil {
					return nil
				}
				if _, err := b.api.apply(ctx, ek, ids[i], ""); err != nil {
					return err
				}
			}
			return nil
		}
	case "P4":
		envs, err := b.srv.newEnvs(ctx, "prof-p4", 1)
		if err != nil {
			return err
		}
		body := apisDocument(keyedSpecs("r", 1000, 0))
		work = func(ctx context.Context) error {
			for ctx.Err() == nil {
				if _, _, err := b.api.plan(ctx, envs[0], body); err != nil {
					return err
				}
			}
			return nil
		}
	case "P2":
		work = func(ctx context.Context) error {
			_, err := b.p2Server(ctx, b.p2Envs, b.o.profileFor, 5)
			return err
		}
	case "P3":
		work = func(ctx context.Context) error {
			for ctx.Err() == nil {
				if _, err := b.replay(ctx, b.p3Env, b.p3Plan, "bench-replay-0001"); err != nil {
					return err
				}
			}
			return nil
		}
	case "P5":
		// P5's plan and apply again (another display name for every
		// resource); the allocations show where the memory went.
		work = func(ctx context.Context) error {
			specs := map[string]map[string]any{}
			for i := range b.p5N {
				k := fmt.Sprintf("big-%05d", i)
				specs[k] = bigSpec(k, 2)
			}
			_, err := b.api.planAndApply(ctx, b.p5Env, apisDocument(specs))
			return err
		}
	case "P6":
		// Plan then apply, one pair at a time (a second plan of the same
		// type would conflict): read the apply in the profile with
		// -focus 'Service..Apply$'.
		work = func(ctx context.Context) error {
			for i := 0; ctx.Err() == nil; i++ {
				if _, err := b.api.planAndApply(ctx, b.p6Big, apisDocument(keyedSpecs(fmt.Sprintf("prof%d", i), 10, 0))); err != nil {
					return err
				}
			}
			return nil
		}
	case "P7":
		work = func(ctx context.Context) error {
			for ctx.Err() == nil {
				if _, err := b.api.do(ctx, http.MethodGet, "/v1/config-plans?limit=20", b.p7Key.Secret, nil, nil); err != nil {
					return err
				}
			}
			return nil
		}
	case "P11":
		// Plan creation under the 50 rules, one after the other: read the
		// rules' share with -focus 'applyPlanRules'.
		body := apisDocument(keyedSpecs("r", 1000, 0))
		work = func(ctx context.Context) error {
			for ctx.Err() == nil {
				if _, _, err := b.api.plan(ctx, b.p11Env, body); err != nil {
					return err
				}
			}
			return nil
		}
	case "P8", "P9", "P10":
		work = b.reviewProfile(id)
	default:
		return fmt.Errorf("no profile workload for %s", id)
	}
	if id == "P5" {
		// Allocations count from the start of the process: the difference
		// with this base is P5's (go tool pprof -diff_base).
		if err := b.srv.fetchProfile(ctx, "/debug/pprof/allocs", filepath.Join(b.o.profileDir, "P5.allocs.base.pprof")); err != nil {
			return err
		}
	}
	fmt.Fprintf(b.out, "  profiling %s for %s …\n", id, b.o.profileFor)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	perr := make(chan error, 1)
	go func() {
		perr <- b.srv.cpuProfile(ctx, b.o.profileFor, path)
		cancel()
	}()
	time.Sleep(50 * time.Millisecond) // the profile is running before the work starts
	werr := work(wctx)
	if errors.Is(werr, context.Canceled) {
		werr = nil
	}
	err := errors.Join(werr, <-perr)
	if id == "P5" && err == nil {
		err = b.srv.fetchProfile(ctx, "/debug/pprof/allocs", filepath.Join(b.o.profileDir, "P5.allocs.pprof"))
	}
	if err == nil {
		fmt.Fprintf(b.out, "  wrote %s\n", path)
	}
	return err
}
