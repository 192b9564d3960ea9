package testdb

import (
	"crypto/rand"
	"encoding/hex"
	"testing"
)

// NewEmpty creates an empty database (not migrated) for t, dropped when t
// ends, and returns its name: for the tests of the migrations themselves.
func NewEmpty(t testing.TB) string {
	t.Helper()
	conn, err := Open(AdminURL())
	if err != nil {
		t.Fatalf("testdb: connect to %s: %v", AdminURL(), err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "keenauth_e_" + hex.EncodeToString(b)
	if err := conn.Exec(`CREATE DATABASE "` + name + `"`).Error; err != nil {
		t.Fatalf("testdb: create %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = conn.Exec(`DROP DATABASE IF EXISTS "` + name + `" WITH (FORCE)`).Error
		if s, err := conn.DB(); err == nil {
			s.Close()
		}
	})
	return name
}
