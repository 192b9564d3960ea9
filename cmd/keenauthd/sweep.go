package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/keenauth/configplans/plans"
)

// sweepEvery is the period of the sweep, which also runs at start.
const sweepEvery = time.Hour

// sweeper runs the retention sweep (revisions, plans and their events):
// at start, then every hour, one replica at a time.
type sweeper struct {
	svc  *plans.Retention
	cfg  plans.SweepConfig
	lock *sweepLock // nil: the only process on its storage (dev mode)
	log  *slog.Logger
}

func newSweeper(svc *plans.Retention, cfg config, lock *sweepLock, log *slog.Logger) *sweeper {
	return &sweeper{svc: svc, cfg: plans.SweepConfig{PlanRetention: cfg.PlanRetention}, lock: lock, log: log}
}

// run sweeps until ctx ends.
func (w *sweeper) run(ctx context.Context) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		w.once(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// once runs one sweep unless another replica holds the lock; it reports
// whether it ran.
func (w *sweeper) once(ctx context.Context) bool {
	if w.lock != nil {
		held, release, err := w.lock.acquire(ctx)
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("sweep skipped: its lock could not be taken", "error", err)
			}
			return false
		}
		if held == nil {
			w.log.Debug("sweep skipped: another replica runs it")
			return false
		}
		ctx = held
		defer release()
	}
	res, err := w.svc.Sweep(ctx, w.cfg)
	switch {
	case err != nil && ctx.Err() == nil:
		w.log.Warn("sweep failed", "error", err, "revisions_deleted", res.Revisions, "plans_deleted", res.Plans)
	case res != (plans.SweepResult{}):
		w.log.Info("sweep", "revisions_deleted", res.Revisions, "plans_deleted", res.Plans, "plan_events_deleted", res.PlanEvents)
	}
	return true
}

// sweepLock is a lease in Redis that one replica holds while it sweeps,
// renewed while it works and released by its owner; a replica that dies
// holding it frees it when the lease ends. Redis, not an advisory lock:
// a session lock is not safe through a transaction pooler, and a sweep
// runs many transactions.
type sweepLock struct {
	rdb   redis.UniversalClient
	key   string
	lease time.Duration
}

func newSweepLock(rdb redis.UniversalClient, prefix string) *sweepLock {
	return &sweepLock{rdb: rdb, key: prefix + "sweep:lock", lease: time.Minute}
}

var (
	renewLockScript   = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end return 0`)
	releaseLockScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)
)

// acquire takes the lock. When held, the context it returns ends if the
// lease is lost (or ctx ends), and release gives the lock back. A nil
// context and no error: another owner holds it.
func (l *sweepLock) acquire(ctx context.Context) (context.Context, func(), error) {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	token := hex.EncodeToString(b)
	ok, err := l.rdb.SetNX(ctx, l.key, token, l.lease).Result()
	if err != nil || !ok {
		return nil, nil, err
	}
	held, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(l.lease / 3)
		defer t.Stop()
		for {
			select {
			case <-held.Done():
				return
			case <-t.C:
				n, err := renewLockScript.Run(held, l.rdb, []string{l.key}, token, l.lease.Milliseconds()).Int()
				if err == nil && n == 0 {
					cancel() // lost: another replica may sweep now
					return
				}
			}
		}
	}()
	return held, func() {
		cancel()
		<-done
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer rcancel()
		_ = releaseLockScript.Run(rctx, l.rdb, []string{l.key}, token).Err()
	}, nil
}
