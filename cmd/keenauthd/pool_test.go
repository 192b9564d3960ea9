package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/keenauth/configplans/test/testdb"
)

func TestPoolSettings(t *testing.T) {
	t.Parallel()
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	cfg, err := loadConfig(env(nil))
	if err != nil || cfg.Pool != (poolConfig{MaxConns: 16, MinConns: 0, MaxLifetime: 30 * time.Minute}) {
		t.Fatalf("defaults: %+v, %v; want 16, 0, 30m", cfg.Pool, err)
	}
	cfg, err = loadConfig(env(map[string]string{"KEENAUTHD_DB_MAX_CONNS": "3", "KEENAUTHD_DB_MIN_CONNS": "2", "KEENAUTHD_DB_CONN_MAX_LIFETIME": "90s"}))
	if err != nil || cfg.Pool != (poolConfig{MaxConns: 3, MinConns: 2, MaxLifetime: 90 * time.Second}) {
		t.Fatalf("set: %+v, %v", cfg.Pool, err)
	}
	for _, bad := range []map[string]string{
		{"KEENAUTHD_DB_MAX_CONNS": "0"}, {"KEENAUTHD_DB_MIN_CONNS": "-1"}, {"KEENAUTHD_DB_CONN_MAX_LIFETIME": "1h-"},
		{"KEENAUTHD_DB_MAX_CONNS": "2", "KEENAUTHD_DB_MIN_CONNS": "3"},
	} {
		if _, err := loadConfig(env(bad)); err == nil || !strings.Contains(err.Error(), "KEENAUTHD_DB_") {
			t.Errorf("%v: %v; want an error naming the variable", bad, err)
		}
	}

	db := testdb.New(t)
	g, err := openDB(context.Background(), db.URL, cfg.Pool)
	if err != nil {
		t.Fatal(err)
	}
	defer closeDB(g)
	sqlDB, _ := g.DB()
	if st := sqlDB.Stats(); st.MaxOpenConnections != 3 || st.OpenConnections < 2 {
		t.Errorf("pool: %d max, %d open; want 3 max and the 2 of KEENAUTHD_DB_MIN_CONNS open", st.MaxOpenConnections, st.OpenConnections)
	}
}

// TestOpenDBPlansGenerically: the process's connections plan generically
// (configdb.GenericPlans); a URL's own choice wins.
func TestOpenDBPlansGenerically(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	for dsn, want := range map[string]string{db.URL: "force_generic_plan", db.URL + "&plan_cache_mode=auto": "auto"} {
		g, err := openDB(context.Background(), dsn, poolConfig{MaxConns: 2, MaxLifetime: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var mode string
		if err := g.Raw("SHOW plan_cache_mode").Row().Scan(&mode); err != nil || mode != want {
			t.Errorf("%s: plan_cache_mode %q, %v; want %q", dsn, mode, err, want)
		}
		closeDB(g)
	}
}
