package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/federation"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/test/testdb"
)

// TestSweepRunsOnOneReplicaAtATime: while one replica holds the sweep's
// lock another skips the sweep; once released, or once the holder's lease
// is lost, another may run it.
func TestSweepRunsOnOneReplicaAtATime(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	rdb, prefix := testdb.Redis(t)
	svc := plans.New(configdb.New(db.DB, nil, configdb.Options{}), federation.Unconfigured{}, plans.DefaultConfig(), nil, plans.Hooks{})
	replica := func() *sweeper {
		lock := newSweepLock(rdb, prefix)
		lock.lease = 300 * time.Millisecond
		return &sweeper{svc: svc.Retention, lock: lock, log: slog.New(slog.DiscardHandler)}
	}
	a, b := replica(), replica()
	ctx := context.Background()

	held, release, err := a.lock.acquire(ctx)
	if err != nil || held == nil {
		t.Fatalf("first acquire: %v, %v", held, err)
	}
	time.Sleep(2 * a.lock.lease) // renewed past its first lease
	if b.once(ctx) {
		t.Fatal("a second replica swept while the first held the lock")
	}
	release()
	if !b.once(ctx) {
		t.Fatal("the sweep did not run once the lock was released")
	}

	held, _, err = a.lock.acquire(ctx)
	if err != nil || held == nil {
		t.Fatalf("acquire again: %v, %v", held, err)
	}
	rdb.Del(ctx, a.lock.key) // the lease lost (as when Redis forgets it)
	select {
	case <-held.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the holder's context did not end when its lease was lost")
	}
}
