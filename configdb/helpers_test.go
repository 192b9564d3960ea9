package configdb_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/test/testdb"
)

// testEnvironment is a PostgreSQL database of the test's own holding one
// environment, env_a, created at the time it returns.
func testEnvironment(t *testing.T) (*testdb.Database, time.Time) {
	t.Helper()
	d := testdb.New(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := d.DB.Create(&configdb.Environment{ID: "env_a", Name: "env_a", CreatedAt: now}).Error; err != nil {
		t.Fatal(err)
	}
	return d, now
}

// openSQLite opens a SQLite database in the test's directory, not
// migrated, closed when the test ends.
func openSQLite(t *testing.T) *gorm.DB {
	t.Helper()
	db, err := configdb.OpenSQLite(filepath.Join(t.TempDir(), "keenauth.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s, err := db.DB(); err == nil {
			s.Close()
		}
	})
	return db
}

// multibyteChanges are a plan's changes of n to n+4 bytes, a string of
// "é✓" (5 bytes) after an 11-byte start, so that a piece of 1,044,480
// bytes ends 2 bytes into a character.
func multibyteChanges(n int) configdb.JSON {
	var b strings.Builder
	b.WriteString(`[{"spec":"x`)
	for b.Len() < n-3 {
		b.WriteString("é✓")
	}
	b.WriteString(`"}]`)
	return configdb.JSON(b.String())
}

// checkSentApart reports an error unless the setting name of tx's
// transaction holds want exactly when want is over LargeParameter (4 MiB), and nothing
// otherwise: what went to the statement through the setting, in pieces.
func checkSentApart(ctx context.Context, t *testing.T, tx *configdb.Tx, name, id string, want []byte) error {
	t.Helper()
	setting, err := settingIn(ctx, tx, name)
	if err != nil {
		return err
	}
	if large := len(want) > configdb.LargeParameter; large != (setting == string(want)) || !large && setting != "" {
		t.Errorf("%s (%d bytes): the transaction's setting holds %d bytes", id, len(want), len(setting))
	}
	return nil
}

// settingIn reads the setting name of tx's transaction, "" when unset.
func settingIn(ctx context.Context, tx *configdb.Tx, name string) (string, error) {
	var v string
	err := tx.Gorm(ctx).Raw("SELECT coalesce(current_setting(?, true), '')", name).Scan(&v).Error
	return v, err
}
