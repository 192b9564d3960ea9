package configdb

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/keenauth/configplans/migrations"
)

// openTestSQLite opens a migrated SQLite database in t's directory, and a
// second handle on the same file with one connection that never waits for
// the write lock (another process, as SQLite sees it).
func openTestSQLite(t *testing.T) (db, other *gorm.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keenauth.db")
	open := func() *gorm.DB {
		d, err := OpenSQLite(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if s, err := d.DB(); err == nil {
				s.Close()
			}
		})
		return d
	}
	db = open()
	if _, err := migrations.UpSQLite(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	other = open()
	s, _ := other.DB()
	s.SetMaxOpenConns(1)
	if err := other.Exec("PRAGMA busy_timeout = 0").Error; err != nil {
		t.Fatal(err)
	}
	return db, other
}

func TestSQLiteTimesCompareAsTimesWhateverTheirZone(t *testing.T) {
	t.Parallel()
	db, _ := openTestSQLite(t)
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	newYork, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	// 10:00 in Paris is 09:00 UTC; 04:30 in New York is 09:30 UTC. As text
	// in their own zones they would sort the other way round.
	at := time.Date(2026, 1, 15, 10, 0, 0, 500_000_000, paris)
	if err := db.Create(&Environment{ID: "env_a", Name: "a", CreatedAt: at}).Error; err != nil {
		t.Fatal(err)
	}
	var env Environment
	if err := db.Where("id = ?", "env_a").Take(&env).Error; err != nil {
		t.Fatal(err)
	}
	if !env.CreatedAt.Equal(at) || env.CreatedAt.Location() != time.UTC {
		t.Fatalf("read back %v, want %v in UTC", env.CreatedAt, at)
	}
	later := time.Date(2026, 1, 15, 4, 30, 0, 0, newYork)
	for _, c := range []struct {
		where string
		arg   time.Time
		want  int64
	}{
		{"created_at < ?", later, 1},
		{"created_at > ?", later, 0},
		{"created_at = ?", at.In(newYork), 1},
		{"created_at < ?", at.Add(time.Millisecond).In(newYork), 1}, // fractions compare too
		{"created_at > ?", at.Add(-500 * time.Millisecond), 1},      // a whole second against a fraction
	} {
		var n int64
		if err := db.Model(&Environment{}).Where(c.where, c.arg).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		if n != c.want {
			t.Errorf("%s with %v: %d rows, want %d", c.where, c.arg, n, c.want)
		}
	}
}

func TestSQLiteTokenActivityKeepsTheLatestTime(t *testing.T) {
	t.Parallel()
	db, _ := openTestSQLite(t)
	d := New(db, time.Now, Options{})
	ctx := context.Background()
	env := Environment{ID: "env_a", Name: "Shop"}
	if err := d.Write(ctx, func(tx *Tx) error { return tx.CreateEnvironment(ctx, &env, nil, nil) }); err != nil {
		t.Fatal(err)
	}
	latest := time.Date(2026, 3, 1, 12, 0, 0, 250_000_000, time.UTC)
	for _, at := range []time.Time{latest.Add(-time.Hour), latest, latest.Add(-time.Second)} {
		if err := d.Write(ctx, func(tx *Tx) error { return tx.RecordTokenActivity(ctx, env.ID, "portal", at) }); err != nil {
			t.Fatal(err)
		}
	}
	var row TokenActivityRow
	if err := db.Where("environment_id = ? AND application_key = ?", env.ID, "portal").Take(&row).Error; err != nil {
		t.Fatal(err)
	}
	if !row.LastIssuedAt.Equal(latest) {
		t.Fatalf("last_issued_at = %v, want %v", row.LastIssuedAt, latest)
	}
}

func TestSQLiteWriteAfterAnotherCommitIsARetry(t *testing.T) {
	t.Parallel()
	db, other := openTestSQLite(t)
	if err := db.Create(&Environment{ID: "env_a", Name: "a", CreatedAt: time.Now()}).Error; err != nil {
		t.Fatal(err)
	}
	err := db.Transaction(func(tx *gorm.DB) error {
		var n int64
		if err := tx.Model(&Environment{}).Count(&n).Error; err != nil { // the snapshot
			return err
		}
		if err := other.Exec("UPDATE environments SET generation = generation + 1").Error; err != nil {
			t.Errorf("the other writer waited for a transaction that had only read: %v", err)
		}
		return tx.Exec("UPDATE environments SET name = 'b'").Error
	})
	if err = interpretError(err); !errors.Is(err, errRetry) {
		t.Fatalf("a write on a stale snapshot: %v, want a retry", err)
	}
	var env Environment
	db.Take(&env)
	if env.Name != "a" || env.Generation != 1 {
		t.Fatalf("environment = %+v, want the other writer's update only", env)
	}
}

func TestSQLiteRetriedTransactionHoldsTheWriteLockFromItsStart(t *testing.T) {
	t.Parallel()
	db, other := openTestSQLite(t)
	retries := 0
	d := New(db, time.Now, Options{OnTxRetry: func() { retries++ }})
	if err := db.Create(&Environment{ID: "env_a", Name: "a", CreatedAt: time.Now()}).Error; err != nil {
		t.Fatal(err)
	}
	var otherWrites []error
	attempts := 0
	err := d.InTx(context.Background(), sql.LevelRepeatableRead, func(tx *Tx) error {
		attempts++
		var env Environment
		if err := tx.g.Take(&env).Error; err != nil {
			return err
		}
		// Another writer, between this transaction's read and its write.
		otherWrites = append(otherWrites, other.Exec("UPDATE environments SET generation = generation + 1").Error)
		return tx.g.Model(&Environment{}).Where("id = ?", env.ID).Update("generation", env.Generation+10).Error
	})
	if err != nil {
		t.Fatal(err)
	}
	if attempts != 2 || retries != 1 {
		t.Fatalf("%d attempts, %d retries; want 2 and 1", attempts, retries)
	}
	if otherWrites[0] != nil {
		t.Errorf("first attempt: the other writer was held back: %v", otherWrites[0])
	}
	if otherWrites[1] == nil {
		t.Errorf("the retry did not hold the write lock: another writer got in")
	}
	var env Environment
	db.Take(&env)
	if env.Generation != 11 {
		t.Fatalf("generation = %d, want 11 (one other write, then the retry's on top of it)", env.Generation)
	}
}
