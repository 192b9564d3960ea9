package migrations_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gorm.io/gorm"

	"github.com/keenauth/configplans/config/displayname"
	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/migrations"
	"github.com/keenauth/configplans/revisions"
	"github.com/keenauth/configplans/test/testdb"
)

func TestSQLiteMigrationsHaveThePostgresVersions(t *testing.T) {
	t.Parallel()
	pg, err := migrations.Postgres()
	if err != nil {
		t.Fatal(err)
	}
	lite, err := migrations.SQLite()
	if err != nil {
		t.Fatal(err)
	}
	versions := func(ms []migrations.Migration) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Version)
		}
		return out
	}
	if diff := cmp.Diff(versions(pg), versions(lite)); diff != "" {
		t.Fatalf("every PostgreSQL migration needs its SQLite twin (-postgres +sqlite):\n%s", diff)
	}
}

// column is what both dialects must agree on, with the PostgreSQL type
// written as the SQLite type that stands for it.
type column struct {
	Type       string
	NotNull    bool
	PrimaryKey bool
}

var sqliteTypeOf = map[string]string{
	"text": "TEXT", "jsonb": "TEXT", "json": "TEXT", "bytea": "BLOB", "bigint": "INTEGER", "integer": "INTEGER",
	"boolean": "BOOLEAN", "timestamp with time zone": "DATETIME",
}

func postgresSchema(t *testing.T, db *gorm.DB) (map[string]map[string]column, []string) {
	var cols []struct {
		TableName, ColumnName, DataType, IsNullable string
		PrimaryKey                                  bool
	}
	err := db.Raw(`SELECT c.table_name, c.column_name, c.data_type, c.is_nullable,
		EXISTS (SELECT 1 FROM information_schema.key_column_usage k
			JOIN information_schema.table_constraints tc ON tc.constraint_name = k.constraint_name AND tc.table_name = k.table_name
			WHERE tc.constraint_type = 'PRIMARY KEY' AND k.table_name = c.table_name AND k.column_name = c.column_name) AS primary_key
		FROM information_schema.columns c WHERE c.table_schema = 'public' AND c.table_name <> 'schema_migrations'`).Scan(&cols).Error
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]column{}
	for _, c := range cols {
		typ, ok := sqliteTypeOf[c.DataType]
		if !ok {
			t.Fatalf("%s.%s: PostgreSQL type %q has no SQLite counterpart in this test", c.TableName, c.ColumnName, c.DataType)
		}
		if out[c.TableName] == nil {
			out[c.TableName] = map[string]column{}
		}
		out[c.TableName][c.ColumnName] = column{Type: typ, NotNull: c.IsNullable == "NO", PrimaryKey: c.PrimaryKey}
	}
	var indexes []string
	if err := db.Raw(`SELECT indexname FROM pg_indexes WHERE schemaname = 'public' AND indexname NOT LIKE '%_pkey' ORDER BY indexname`).Scan(&indexes).Error; err != nil {
		t.Fatal(err)
	}
	return out, indexes
}

func sqliteSchema(t *testing.T, db *gorm.DB) (map[string]map[string]column, []string) {
	var tables []string
	if err := db.Raw(`SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'schema_migrations'`).Scan(&tables).Error; err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]column{}
	for _, table := range tables {
		var cols []struct {
			Name    string
			Type    string
			NotNull bool
			PK      int
		}
		// table_xinfo lists generated columns too (hidden 2 and 3).
		if err := db.Raw(`SELECT name, type, "notnull" AS not_null, pk FROM pragma_table_xinfo(?) WHERE hidden IN (0, 2, 3)`, table).Scan(&cols).Error; err != nil {
			t.Fatal(err)
		}
		out[table] = map[string]column{}
		for _, c := range cols {
			// A primary-key column is NOT NULL in PostgreSQL whatever it says.
			out[table][c.Name] = column{Type: c.Type, NotNull: c.NotNull || c.PK > 0, PrimaryKey: c.PK > 0}
		}
	}
	var indexes []string
	if err := db.Raw(`SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name`).Scan(&indexes).Error; err != nil {
		t.Fatal(err)
	}
	return out, indexes
}

func TestSQLiteSchemaHasThePostgresTablesColumnsAndIndexes(t *testing.T) {
	t.Parallel()
	pgTables, pgIndexes := postgresSchema(t, testdb.New(t).DB)
	liteTables, liteIndexes := sqliteSchema(t, testdb.NewSQLite(t).DB)
	if len(pgTables) == 0 {
		t.Fatal("no PostgreSQL tables read")
	}
	if diff := cmp.Diff(pgTables, liteTables); diff != "" {
		t.Errorf("tables and columns differ (-postgres +sqlite):\n%s", diff)
	}
	if diff := cmp.Diff(pgIndexes, liteIndexes); diff != "" {
		t.Errorf("indexes differ (-postgres +sqlite):\n%s", diff)
	}
}

func TestUpSQLiteAppliesEachMigrationOnce(t *testing.T) {
	t.Parallel()
	d := testdb.NewSQLite(t) // migrated once already
	applied, err := migrations.UpSQLite(context.Background(), d.DB)
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) != 0 {
		t.Fatalf("second run applied %v", applied)
	}
	var versions []string
	if err := d.DB.Raw("SELECT version FROM schema_migrations ORDER BY version").Scan(&versions).Error; err != nil {
		t.Fatal(err)
	}
	ms, _ := migrations.SQLite()
	if len(versions) != len(ms) || versions[0] != ms[0].Version {
		t.Fatalf("schema_migrations = %v, want the %d versions of SQLite()", versions, len(ms))
	}
}

func TestUpSQLiteRefusesAPostgresDatabase(t *testing.T) {
	t.Parallel()
	_, err := migrations.UpSQLite(context.Background(), testdb.New(t).DB)
	if err == nil {
		t.Fatal("UpSQLite ran on PostgreSQL")
	}
}

// undoDisplayNameKeys takes a migrated database back to before migration
// 0004, as a database of the previous release is.
func undoDisplayNameKeys(t *testing.T, db *gorm.DB) {
	t.Helper()
	expr := "(spec->>'display_name')"
	if db.Dialector.Name() == "sqlite" {
		expr = "json_extract(spec, '$.display_name')"
	}
	for _, stmt := range []string{
		"DROP INDEX resources_display_name_key",
		"ALTER TABLE resources DROP COLUMN display_name_key",
		"CREATE INDEX resources_display_name ON resources (environment_id, kind, " + expr + ")",
		"DELETE FROM schema_migrations WHERE version = '0004_display_name_keys'",
	} {
		if err := db.Exec(stmt).Error; err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

func TestMigrationFillsTheDisplayNameKeyOfRowsWrittenBefore(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"postgres", "sqlite"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			var db *gorm.DB
			up := migrations.Up
			if backend == "sqlite" {
				db, up = testdb.NewSQLite(t).DB, migrations.UpSQLite
			} else {
				db = testdb.New(t).DB
			}
			undoDisplayNameKeys(t, db)
			now := time.Now().UTC()
			rows := map[string]string{ // kind/key → display name
				"connection/main-db": "Cafe\u0301 MAIN",
				"role/admin":         "Stra\u00dfe",
				"api/orders":         "Orders",
				"application/portal": "Portal",
			}
			// More than one batch of connections.
			for i := range 1203 {
				rows[fmt.Sprintf("connection/c-%04d", i)] = fmt.Sprintf("Conn %d", i)
			}
			err := db.Transaction(func(tx *gorm.DB) error {
				if err := tx.Exec("INSERT INTO environments (id, name, generation, created_at) VALUES ('env_1', 'Shop', 0, ?)", now).Error; err != nil {
					return err
				}
				for ref, name := range rows {
					kind, key, _ := strings.Cut(ref, "/")
					spec, _ := json.Marshal(map[string]string{"display_name": name})
					if err := tx.Exec(`INSERT INTO resources (environment_id, kind, key, resource_id, version, spec, created_at, updated_at)
						VALUES ('env_1', ?, ?, '', 1, ?, ?, ?)`, kind, key, string(spec), now, now).Error; err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			applied, err := up(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"0004_display_name_keys"}, applied); diff != "" {
				t.Fatalf("applied (-want +got):\n%s", diff)
			}
			var got []struct {
				Kind, Key      string
				DisplayNameKey *string
			}
			if err := db.Raw("SELECT kind, key, display_name_key FROM resources WHERE environment_id = 'env_1'").Scan(&got).Error; err != nil {
				t.Fatal(err)
			}
			if len(got) != len(rows) {
				t.Fatalf("%d rows, want %d", len(got), len(rows))
			}
			for _, r := range got {
				var want *string
				if r.Kind == "connection" || r.Kind == "role" {
					k := displayname.Key(rows[r.Kind+"/"+r.Key])
					want = &k
				}
				if diff := cmp.Diff(want, r.DisplayNameKey); diff != "" {
					t.Errorf("%s/%s: display_name_key (-want +got):\n%s", r.Kind, r.Key, diff)
				}
			}
		})
	}
}

func TestMigrationFillsTheTypeSetOfPlansWrittenBefore(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"postgres", "sqlite"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			var db *gorm.DB
			up := migrations.Up
			if backend == "sqlite" {
				db, up = testdb.NewSQLite(t).DB, migrations.UpSQLite
			} else {
				db = testdb.New(t).DB
			}
			for _, stmt := range []string{
				"DROP INDEX config_plans_type_set",
				"ALTER TABLE config_plans DROP COLUMN type_set",
				"DELETE FROM schema_migrations WHERE version = '0005_plan_type_sets'",
			} {
				if err := db.Exec(stmt).Error; err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
			now := time.Now().UTC()
			if err := db.Exec("INSERT INTO environments (id, name, generation, created_at) VALUES ('env_1', 'Shop', 0, ?)", now).Error; err != nil {
				t.Fatal(err)
			}
			// Bytewise order: application before application_branding, as
			// Go sorts the kinds the service writes.
			want := map[string]string{
				"cfgp_1": "api,application,application_branding,role",
				"cfgp_2": "connection",
				"cfgp_3": "",
			}
			types := map[string]string{
				"cfgp_1": `["role", "application_branding", "application", "api"]`,
				"cfgp_2": `["connection"]`,
				"cfgp_3": `[]`,
			}
			for id, ts := range types {
				err := db.Exec(`INSERT INTO config_plans (environment_id, id, status, prune, types, referencing_types, changes, warnings,
					required_secrets, requires_sp_host, summary, versions, fingerprints, created_at, expires_at, created_by)
					VALUES ('env_1', ?, 'planned', false, ?, '[]', '[]', '[]', '[]', false, '{}', '{}', '{}', ?, ?, 'key_1')`,
					id, ts, now, now).Error
				if err != nil {
					t.Fatal(err)
				}
			}
			applied, err := up(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"0005_plan_type_sets"}, applied); diff != "" {
				t.Fatalf("applied (-want +got):\n%s", diff)
			}
			var rows []struct{ ID, TypeSet string }
			if err := db.Raw("SELECT id, type_set FROM config_plans WHERE environment_id = 'env_1'").Scan(&rows).Error; err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, r := range rows {
				got[r.ID] = r.TypeSet
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("type_set (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConcurrentMigrationsThroughPgBouncer: five migrations at once on an
// empty database through PgBouncer in transaction mode apply every
// migration exactly once, and none waits on a lock left on a pooled
// connection.
func TestConcurrentMigrationsThroughPgBouncer(t *testing.T) {
	t.Parallel()
	bouncer := testdb.StartPgBouncer(t)
	name := testdb.NewEmpty(t)
	ms, err := migrations.Postgres()
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		applied = map[string]int{}
	)
	for range n {
		db, err := testdb.Open(bouncer.URLFor(name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if s, err := db.DB(); err == nil {
				s.Close()
			}
		})
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			vs, err := migrations.Up(ctx, db)
			if err != nil {
				t.Errorf("Up through PgBouncer: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, v := range vs {
				applied[v]++
			}
		})
	}
	wg.Wait()
	want := map[string]int{}
	for _, m := range ms {
		want[m.Version] = 1
	}
	if diff := cmp.Diff(want, applied); diff != "" {
		t.Errorf("migrations applied by the %d runs (-want +got):\n%s", n, diff)
	}
	db, err := testdb.Open(testdb.URLFor(name))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if s, err := db.DB(); err == nil {
			s.Close()
		}
	}()
	var recorded int64
	if err := db.Raw("SELECT count(*) FROM schema_migrations").Scan(&recorded).Error; err != nil || recorded != int64(len(ms)) {
		t.Errorf("schema_migrations holds %d versions (%v), want %d", recorded, err, len(ms))
	}
	var locks int64
	// Locks of this database only: other packages' tests migrate their own
	// databases at the same time, under the same lock id.
	if err := db.Raw(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 7394201
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&locks).Error; err != nil || locks != 0 {
		t.Errorf("%d migration locks still held (%v), want none", locks, err)
	}
}

// TestRevisionsReadTheSameAfterTheResourcesBecomeJSON: a revision written
// while resources was jsonb reads back with canonical specs once the column
// is json, and one written after is stored byte for byte as Encode wrote it.
func TestRevisionsReadTheSameAfterTheResourcesBecomeJSON(t *testing.T) {
	t.Parallel()
	db := testdb.New(t).DB
	for _, stmt := range []string{
		"ALTER TABLE config_revisions ALTER COLUMN resources TYPE jsonb USING resources::jsonb",
		"DELETE FROM schema_migrations WHERE version = '0007_revision_resources_json'",
	} {
		if err := db.Exec(stmt).Error; err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	now := time.Now().UTC()
	if err := db.Exec("INSERT INTO environments (id, name, generation, created_at) VALUES ('env_1', 'Shop', 0, ?)", now).Error; err != nil {
		t.Fatal(err)
	}
	spec := `{"identifier":"https://a.example/x?y=1&z=<2>","display_name":"Caf\u00e9 \"A\"","scopes":[{"value":"read","description":"d"}],"token_lifetime_seconds":3600}`
	want := json.RawMessage(`{"display_name":"Café \"A\"","identifier":"https://a.example/x?y=1&z=<2>","scopes":[{"description":"d","value":"read"}],"token_lifetime_seconds":3600}`)
	v := 3
	rs := []revisions.Resource{
		{Kind: "api", Key: "a", Action: "update", VersionBefore: &v, SpecBefore: json.RawMessage(spec)},
		{Kind: "api", Key: "b", Action: "create"},
	}
	old, err := json.Marshal(rs) // what Encode wrote before, cast to jsonb
	if err != nil {
		t.Fatal(err)
	}
	rev := revisions.Revision{EnvironmentID: "env_1", ID: "cfgr_1", PlanID: "cfgp_1", Types: []string{"api"}, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := db.Exec(`INSERT INTO config_revisions (environment_id, id, plan_id, types, counts, resources, created_at, expires_at)
		VALUES ('env_1', 'cfgr_1', 'cfgp_1', '["api"]', '{}', ?::jsonb, ?, ?)`, string(old), now, rev.ExpiresAt).Error; err != nil {
		t.Fatal(err)
	}
	applied, err := migrations.Up(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"0007_revision_resources_json"}, applied); diff != "" {
		t.Fatalf("applied (-want +got):\n%s", diff)
	}
	store := configdb.New(db, func() time.Time { return now }, configdb.Options{})
	got, err := store.GetRevision(context.Background(), "env_1", "cfgr_1", 50)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Resources[0].SpecBefore) != string(want) || string(got.Resources[1].SpecBefore) != "null" {
		t.Errorf("specs read after the migration: %s, %s; want %s, null", got.Resources[0].SpecBefore, got.Resources[1].SpecBefore, want)
	}

	enc, err := revisions.Encode(rs)
	if err != nil {
		t.Fatal(err)
	}
	rev.ID = "cfgr_2"
	if err := store.InTx(context.Background(), sql.LevelReadCommitted, func(tx *configdb.Tx) error { return tx.RecordRevision(rev, enc) }); err != nil {
		t.Fatal(err)
	}
	var stored string
	if err := db.Raw("SELECT resources::text FROM config_revisions WHERE id = 'cfgr_2'").Scan(&stored).Error; err != nil {
		t.Fatal(err)
	}
	if stored != string(enc) || !strings.Contains(stored, string(want)) {
		t.Errorf("stored %s\nEncode  %s\nwant the spec %s in it", stored, enc, want)
	}
	if got, err = store.GetRevision(context.Background(), "env_1", "cfgr_2", 50); err != nil {
		t.Fatal(err)
	}
	var back []revisions.Resource
	_ = json.Unmarshal(old, &back)
	back[0].SpecBefore = want
	back[1].SpecBefore = json.RawMessage("null")
	if diff := cmp.Diff(back, got.Resources); diff != "" {
		t.Errorf("read after Encode (-want +got):\n%s", diff)
	}
}

// TestLargeValuesAreCompressedWithLZ4: after migration 0008, a large value
// written to the columns that hold them is compressed with lz4 when the
// server has it, and with pglz (the default) when it has not; either way
// it reads back as written.
func TestLargeValuesAreCompressedWithLZ4(t *testing.T) {
	t.Parallel()
	db := testdb.New(t).DB
	want := "lz4"
	if err := db.Transaction(func(tx *gorm.DB) error {
		return tx.Exec("SELECT set_config('default_toast_compression', 'lz4', true)").Error
	}); err != nil {
		want = "pglz" // a server built without lz4
	}
	var methods []struct{ Table, Column, Method string }
	if err := db.Raw(`SELECT c.relname AS "table", a.attname AS "column", a.attcompression::text AS method
		FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
		WHERE (c.relname, a.attname) IN (('config_plans', 'changes'), ('config_plans', 'versions'), ('config_plans', 'fingerprints'),
			('config_plans', 'moved'), ('config_revisions', 'resources'), ('resources', 'spec'))
		ORDER BY 1, 2`).Scan(&methods).Error; err != nil {
		t.Fatal(err)
	}
	if len(methods) != 6 {
		t.Fatalf("%d columns found, want 6: %+v", len(methods), methods)
	}
	for _, m := range methods {
		if got := map[string]string{"l": "lz4", "p": "pglz", "": "pglz"}[m.Method]; got != want {
			t.Errorf("%s.%s compresses with %s, want %s", m.Table, m.Column, got, want)
		}
	}
	now := time.Now().UTC()
	if err := db.Exec("INSERT INTO environments (id, name, generation, created_at) VALUES ('env_1', 'Shop', 0, ?)", now).Error; err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteByte('[')
	for i := range 2000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"action":"update","key":"api-%d","kind":"api","spec_before":{"description":"the api number %d"}}`, i, i)
	}
	b.WriteByte(']')
	if err := db.Exec(`INSERT INTO config_revisions (environment_id, id, plan_id, types, counts, resources, created_at, expires_at)
		VALUES ('env_1', 'cfgr_1', 'cfgp_1', '["api"]', '{}', ?::json, ?, ?)`, b.String(), now, now.Add(time.Hour)).Error; err != nil {
		t.Fatal(err)
	}
	var stored struct {
		Method    string
		Resources string
	}
	if err := db.Raw("SELECT pg_column_compression(resources) AS method, resources::text AS resources FROM config_revisions WHERE id = 'cfgr_1'").
		Scan(&stored).Error; err != nil {
		t.Fatal(err)
	}
	if stored.Method != want || stored.Resources != b.String() {
		t.Errorf("a revision of %d bytes is stored compressed with %q and reads back %d bytes; want %s and the bytes written",
			b.Len(), stored.Method, len(stored.Resources), want)
	}
}
