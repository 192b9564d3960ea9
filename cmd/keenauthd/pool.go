package main

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"
)

// poolConfig is the PostgreSQL pool of one process (KEENAUTHD_DB_*). Every
// connection of the process comes from it, the migration lock's included,
// so replicas × MaxConns is what the fleet can take of max_connections.
type poolConfig struct {
	MaxConns    int           // KEENAUTHD_DB_MAX_CONNS (16)
	MinConns    int           // KEENAUTHD_DB_MIN_CONNS (0): opened at start and kept open
	MaxLifetime time.Duration // KEENAUTHD_DB_CONN_MAX_LIFETIME (30m)
}

// loadPool reads the pool settings; it returns the problems it found.
func loadPool(getenv func(string) string) (poolConfig, []string) {
	p := poolConfig{MaxConns: 16, MaxLifetime: 30 * time.Minute}
	var errs []string
	whole := func(name string, def, min int) int {
		v := getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < min {
			errs = append(errs, fmt.Sprintf("%s=%q is not a whole number ≥ %d", name, v, min))
			return def
		}
		return n
	}
	p.MaxConns = whole("KEENAUTHD_DB_MAX_CONNS", p.MaxConns, 1)
	p.MinConns = whole("KEENAUTHD_DB_MIN_CONNS", p.MinConns, 0)
	if v := getenv("KEENAUTHD_DB_CONN_MAX_LIFETIME"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Sprintf("KEENAUTHD_DB_CONN_MAX_LIFETIME=%q is not a positive Go duration (e.g. 30m)", v))
		} else {
			p.MaxLifetime = d
		}
	}
	if p.MinConns > p.MaxConns {
		errs = append(errs, fmt.Sprintf("KEENAUTHD_DB_MIN_CONNS=%d is more than KEENAUTHD_DB_MAX_CONNS=%d", p.MinConns, p.MaxConns))
	}
	return p, errs
}

// apply sets the pool of db and opens its MinConns connections.
func (p poolConfig) apply(ctx context.Context, db *sql.DB) error {
	db.SetMaxOpenConns(p.MaxConns)
	db.SetMaxIdleConns(p.MaxConns)
	db.SetConnMaxLifetime(p.MaxLifetime)
	if p.MinConns == 0 {
		db.SetConnMaxIdleTime(5 * time.Minute)
		return nil
	}
	// database/sql has no minimum: the idle connections are kept (until
	// their lifetime ends) instead of closing after 5 idle minutes.
	db.SetConnMaxIdleTime(0)
	conns := make([]*sql.Conn, 0, p.MinConns)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for range p.MinConns {
		c, err := db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("KEENAUTHD_DB_MIN_CONNS: opening connection %d: %w", len(conns)+1, err)
		}
		conns = append(conns, c)
	}
	return nil
}
