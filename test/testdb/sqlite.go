package testdb

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/migrations"
)

// NewSQLite gives t its own embedded (SQLite) database, the storage of
// `keenauthd dev`: a file in t's temporary directory, migrated with the
// SQLite migrations and closed when t ends. URL is empty: there is no server.
func NewSQLite(t testing.TB) *Database {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keenauth.db")
	db, err := configdb.OpenSQLite(path)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(func() {
		if s, err := db.DB(); err == nil {
			s.Close()
		}
	})
	if _, err := migrations.UpSQLite(context.Background(), db); err != nil {
		t.Fatalf("testdb: migrate %s: %v", path, err)
	}
	return &Database{Name: path, DB: db}
}
