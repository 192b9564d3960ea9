// Package migrations holds the numbered SQL migrations of the service,
// embedded in the binary, and applies them.
package migrations

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"gorm.io/gorm"

	"github.com/keenauth/configplans/config/displayname"
)

//go:embed postgres/*.sql
var postgresFiles embed.FS

//go:embed sqlite/*.sql
var sqliteFiles embed.FS

// Migration is one numbered SQL file and, for the few that need what SQL
// cannot compute, a step in Go run after it in the same transaction.
type Migration struct {
	Version string
	SQL     string
	Go      func(tx *gorm.DB) error
}

// goSteps are the steps in Go, by version; the same for both dialects.
var goSteps = map[string]func(tx *gorm.DB) error{
	"0004_display_name_keys": backfillDisplayNameKeys,
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
		v := strings.TrimSuffix(e.Name(), ".sql")
		out = append(out, Migration{Version: v, SQL: string(b), Go: goSteps[v]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// migrateLockID is the advisory lock that keeps two replicas starting at
// once from applying the same migration twice.
const migrateLockID = 7394201

// Up applies every PostgreSQL migration not applied yet, each in its own
// transaction, and returns the versions applied. Each transaction first
// takes a transaction-scoped advisory lock, then reads schema_migrations:
// the lock ends with the transaction, so it is safe through a transaction
// pooler (PgBouncer in transaction mode), where a session lock would stay
// with a pooled server connection, or be taken and released on two
// different ones.
func Up(ctx context.Context, db *gorm.DB) ([]string, error) {
	ms, err := Postgres()
	if err != nil {
		return nil, err
	}
	var applied []string
	for _, m := range ms {
		ran := false
		err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", migrateLockID).Error; err != nil {
				return fmt.Errorf("lock: %w", err)
			}
			if err := tx.Exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
				version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`).Error; err != nil {
				return err
			}
			var n int64
			if err := tx.Raw("SELECT count(*) FROM schema_migrations WHERE version = ?", m.Version).Scan(&n).Error; err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			ran = true
			return run(tx, m)
		})
		if err != nil {
			return applied, fmt.Errorf("migrate %s: %w", m.Version, err)
		}
		if ran {
			applied = append(applied, m.Version)
		}
	}
	return applied, nil
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

// run applies one migration inside tx: its SQL, its step in Go, and its
// row in schema_migrations.
func run(tx *gorm.DB, m Migration) error {
	if err := tx.Exec(m.SQL).Error; err != nil {
		return err
	}
	if m.Go != nil {
		if err := m.Go(tx); err != nil {
			return err
		}
	}
	return tx.Exec("INSERT INTO schema_migrations (version) VALUES (?)", m.Version).Error
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
		err := conn.Transaction(func(tx *gorm.DB) error { return run(tx, m) })
		if err != nil {
			return nil, fmt.Errorf("migrate %s: %w", m.Version, err)
		}
		applied = append(applied, m.Version)
	}
	return applied, nil
}

// backfillBatch is how many rows a backfill reads at a time.
const backfillBatch = 500

// backfillDisplayNameKeys writes the folded display_name_key of the
// connections and roles written before migration 0004, which the service
// writes itself from then on. It runs once, in the migration's transaction,
// so that no lookup ever has to fold a stored name: the service's lookup
// still reads a row whose key is NULL (one written by a replica of the
// previous release during a rolling upgrade), so a row this step did not
// see is found all the same, only without the index's help.
func backfillDisplayNameKeys(tx *gorm.DB) error {
	type row struct {
		EnvironmentID string
		Kind          string
		Key           string
		Spec          string
	}
	var last *row
	for {
		q := tx.Table("resources").Select("environment_id, kind, key, spec").
			Where("kind IN ('connection', 'role') AND display_name_key IS NULL")
		if last != nil {
			q = q.Where("(environment_id, kind, key) > (?, ?, ?)", last.EnvironmentID, last.Kind, last.Key)
		}
		var rows []row
		if err := q.Order("environment_id, kind, key").Limit(backfillBatch).Scan(&rows).Error; err != nil {
			return fmt.Errorf("backfill display_name_key: %w", err)
		}
		for _, r := range rows {
			var spec struct {
				DisplayName string `json:"display_name"`
			}
			if err := json.Unmarshal([]byte(r.Spec), &spec); err != nil {
				return fmt.Errorf("backfill display_name_key of %s/%s in %s: %w", r.Kind, r.Key, r.EnvironmentID, err)
			}
			if spec.DisplayName == "" {
				continue
			}
			err := tx.Exec("UPDATE resources SET display_name_key = ? WHERE environment_id = ? AND kind = ? AND key = ?",
				displayname.Key(spec.DisplayName), r.EnvironmentID, r.Kind, r.Key).Error
			if err != nil {
				return fmt.Errorf("backfill display_name_key: %w", err)
			}
		}
		if len(rows) < backfillBatch {
			return nil
		}
		last = &rows[len(rows)-1]
	}
}
