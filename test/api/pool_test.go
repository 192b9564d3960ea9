package api_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/keenauth/configplans/test/apitest"
	"github.com/keenauth/configplans/test/testdb"
)

// TestNoConnectionIs503WithItsCause: when PostgreSQL refuses new
// connections (a connection limit reached: SQLSTATE 53300, as with too
// small a max_connections), a request is 503 service_unavailable with
// Retry-After, and its log line names the cause.
func TestNoConnectionIs503WithItsCause(t *testing.T) {
	t.Parallel()
	if apitest.Embedded() {
		t.Skip("needs PostgreSQL/Redis: PostgreSQL's connection limits")
	}
	db := testdb.New(t)
	admin, err := testdb.Open(testdb.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	role := "keenauth_limited_" + hex.EncodeToString(b)
	if err := admin.Exec(`CREATE ROLE "` + role + `" LOGIN`).Error; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = db.DB.Exec(`DROP OWNED BY "` + role + `"`).Error
		_ = admin.Exec(`DROP ROLE IF EXISTS "` + role + `"`).Error
		if s, err := admin.DB(); err == nil {
			s.Close()
		}
	})
	for _, q := range []string{`GRANT ALL ON SCHEMA public TO "` + role + `"`, `GRANT ALL ON ALL TABLES IN SCHEMA public TO "` + role + `"`} {
		if err := db.DB.Exec(q).Error; err != nil {
			t.Fatal(err)
		}
	}
	u, _ := url.Parse(db.URL)
	u.User = url.User(role)
	limited, err := testdb.Open(u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s, err := limited.DB(); err == nil {
			s.Close()
		}
	})
	e := apitest.Setup(t, apitest.Options{Database: &testdb.Database{Name: db.Name, URL: u.String(), DB: limited}})
	if r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config"}); r.Status != http.StatusOK {
		t.Fatalf("before the limit: %d %s", r.Status, r.Body)
	}

	// No new connection for the role, and the open ones ended. The pool
	// keeps no idle connection: one that the termination killed would
	// answer the next request with its own 57P01 (server_shutdown) before
	// the pool notices, instead of the refusal this test is about.
	if s, err := limited.DB(); err == nil {
		s.SetMaxIdleConns(0)
	}
	if err := admin.Exec(`ALTER ROLE "` + role + `" CONNECTION LIMIT 0`).Error; err != nil {
		t.Fatal(err)
	}
	if err := admin.Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = ?`, role).Error; err != nil {
		t.Fatal(err)
	}
	r := e.Do(apitest.Request{Method: "GET", Path: "/v1/config"})
	if r.Status != http.StatusServiceUnavailable || r.Code() != "service_unavailable" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("with no connection to be had: %d %s (Retry-After %q); want 503 service_unavailable with Retry-After",
			r.Status, r.Body, r.Header.Get("Retry-After"))
	}
	var found bool
	for _, line := range strings.Split(e.Logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil || m["request_id"] != r.Header.Get("Request-Id") {
			continue
		}
		if m["cause"] == "too_many_connections" {
			found = true
		}
	}
	if !found {
		t.Errorf("no log line of request %s names the cause too_many_connections:\n%s", r.Header.Get("Request-Id"), e.Logs.String())
	}
}
