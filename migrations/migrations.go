// Package migrations holds the numbered SQL migrations of the service,
// embedded in the binary, and applies them.
package migrations

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"gorm.io/gorm"
)

//go:embed postgres/*.sql
var postgresFiles embed.FS

//go:embed sqlite/*.sql
var sqliteFiles embed.FS

// Migration is one numbered SQL file.
type Migration struct {
	Version string
	SQL     string
}

// Postgres returns the PostgreSQL migrations in order.
func Postgres() ([]Migration, error) { return load(postgresFiles, "postgres") }

// SQLite returns the migrations of the embedded storage of dev mode, in
// order: the same versions, tables and columns as Postgres.
func SQLite() ([]Migration, error) { return load(sqliteFiles, "sqlite") }

func load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		b, err := fs.ReadFile(fsys, dir+"/"+e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: strings.TrimSuffix(e.Name(), ".sql"), SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// migrateLockID is the advisory lock that keeps two replicas starting at
// once from applying the same migration twice.
const migrateLockID = 7394201

// Up applies every PostgreSQL migration not applied yet, each in its own
// transaction, under a session advisory lock. It returns the versions applied.
func Up(ctx context.Context, db *gorm.DB) ([]string, error) {
	ms, err := Postgres()
	if err != nil {
		return nil, err
	}
	var applied []string
	err = db.WithContext(ctx).Connection(func(conn *gorm.DB) error {
		if err := conn.Exec("SELECT pg_advisory_lock(?)", migrateLockID).Error; err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
		defer conn.Exec("SELECT pg_advisory_unlock(?)", migrateLockID)
		var err error
		applied, err = apply(conn, ms, "timestamptz NOT NULL DEFAULT now()")
		return err
	})
	return applied, err
}

// UpSQLite applies every SQLite migration not applied yet, each in its own
// transaction. SQLite has no advisory lock: the one process that opens the
// database (dev mode holds a lock file) is the only one migrating it.
func UpSQLite(ctx context.Context, db *gorm.DB) ([]string, error) {
	if name := db.Dialector.Name(); name != "sqlite" {
		return nil, fmt.Errorf("migrate: UpSQLite on a %s database", name)
	}
	ms, err := SQLite()
	if err != nil {
		return nil, err
	}
	return apply(db.WithContext(ctx), ms, "DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP")
}

// apply runs the migrations of ms that schema_migrations does not list.
func apply(conn *gorm.DB, ms []Migration, appliedAtType string) ([]string, error) {
	var applied []string
	if err := conn.Exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
		version text PRIMARY KEY, applied_at ` + appliedAtType + `)`).Error; err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	var done []string
	if err := conn.Raw("SELECT version FROM schema_migrations").Scan(&done).Error; err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	have := map[string]bool{}
	for _, v := range done {
		have[v] = true
	}
	for _, m := range ms {
		if have[m.Version] {
			continue
		}
		err := conn.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec(m.SQL).Error; err != nil {
				return err
			}
			return tx.Exec("INSERT INTO schema_migrations (version) VALUES (?)", m.Version).Error
		})
		if err != nil {
			return nil, fmt.Errorf("migrate %s: %w", m.Version, err)
		}
		applied = append(applied, m.Version)
	}
	return applied, nil
}
