// Package testdb gives every test its own PostgreSQL database, cloned from a
// template migrated once (per migration content) for the whole machine.
package testdb

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/migrations"
)

// AdminURL is the server the tests use (KEENAUTH_TEST_DATABASE_URL, by
// default the local PostgreSQL with trust auth).
func AdminURL() string {
	if v := os.Getenv("KEENAUTH_TEST_DATABASE_URL"); v != "" {
		return v
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// URLFor returns the URL of database name on the test server.
func URLFor(name string) string {
	u, err := url.Parse(AdminURL())
	if err != nil {
		panic(err)
	}
	u.Path = "/" + name
	return u.String()
}

// Open opens a GORM handle that logs nothing, its statements planned as
// keenauthd's are (configdb.GenericPlans).
func Open(dsn string) (*gorm.DB, error) {
	dsn, err := configdb.GenericPlans(dsn)
	if err != nil {
		return nil, err
	}
	return gorm.Open(postgres.Open(dsn), &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true})
}

var (
	templateOnce sync.Once
	templateName string
	templateErr  error
	admin        *gorm.DB
)

// lockID serialises template creation and cloning across test processes.
const lockID = 7394202

func setupTemplate() {
	ms, err := migrations.Postgres()
	if err != nil {
		templateErr = err
		return
	}
	h := sha256.New()
	for _, m := range ms {
		h.Write([]byte(m.Version + "\x00" + m.SQL + "\x00"))
	}
	templateName = "keenauth_tmpl_" + hex.EncodeToString(h.Sum(nil))[:16]
	admin, err = Open(AdminURL())
	if err != nil {
		templateErr = fmt.Errorf("testdb: connect to %s: %w (is PostgreSQL running? see README)", AdminURL(), err)
		return
	}
	sqlDB, _ := admin.DB()
	sqlDB.SetMaxOpenConns(4)
	templateErr = withLock(func(conn *gorm.DB) error {
		var n int64
		if err := conn.Raw("SELECT count(*) FROM pg_database WHERE datname = ?", templateName).Scan(&n).Error; err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		building := templateName + "_build"
		_ = conn.Exec(`DROP DATABASE IF EXISTS "` + building + `" WITH (FORCE)`).Error
		if err := conn.Exec(`CREATE DATABASE "` + building + `"`).Error; err != nil {
			return err
		}
		db, err := Open(URLFor(building))
		if err != nil {
			return err
		}
		_, err = migrations.Up(context.Background(), db)
		if s, e := db.DB(); e == nil {
			s.Close()
		}
		if err != nil {
			return fmt.Errorf("migrate template: %w", err)
		}
		return conn.Exec(`ALTER DATABASE "` + building + `" RENAME TO "` + templateName + `"`).Error
	})
}

func withLock(fn func(conn *gorm.DB) error) error {
	return admin.Connection(func(conn *gorm.DB) error {
		if err := conn.Exec("SELECT pg_advisory_lock(?)", lockID).Error; err != nil {
			return err
		}
		defer conn.Exec("SELECT pg_advisory_unlock(?)", lockID)
		return fn(conn)
	})
}

// Database is a test's own database.
type Database struct {
	Name string
	URL  string
	DB   *gorm.DB
}

// New clones the migrated template into a new database for t and drops it
// when t ends.
func New(t testing.TB) *Database {
	t.Helper()
	templateOnce.Do(setupTemplate)
	if templateErr != nil {
		t.Fatalf("testdb: %v", templateErr)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "keenauth_t_" + hex.EncodeToString(b)
	err := withLock(func(conn *gorm.DB) error {
		var err error
		for attempt := 0; attempt < 20; attempt++ {
			err = conn.Exec(`CREATE DATABASE "` + name + `" TEMPLATE "` + templateName + `"`).Error
			if err == nil || !strings.Contains(err.Error(), "being accessed by other users") {
				return err
			}
			time.Sleep(50 * time.Millisecond)
		}
		return err
	})
	if err != nil {
		t.Fatalf("testdb: clone template: %v", err)
	}
	d := &Database{Name: name, URL: URLFor(name)}
	d.DB, err = Open(d.URL)
	if err != nil {
		t.Fatalf("testdb: open %s: %v", name, err)
	}
	t.Cleanup(func() {
		if s, err := d.DB.DB(); err == nil {
			s.Close()
		}
		_ = admin.Exec(`DROP DATABASE IF EXISTS "` + name + `" WITH (FORCE)`).Error
	})
	return d
}
