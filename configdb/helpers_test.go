package configdb_test

import (
	"path/filepath"
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
