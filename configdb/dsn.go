package configdb

import (
	"net/url"

	"github.com/jackc/pgx/v5"
)

// GenericPlans is dsn with plan_cache_mode=force_generic_plan when its
// connections keep named prepared statements (pgx's default query mode,
// cache_statement) and it does not choose a plan_cache_mode itself.
//
// In the default mode (auto) PostgreSQL plans a prepared statement again
// for its parameters while that looks cheaper than its generic plan, and
// what it plans grows with the tables. With other environments' data in
// the database (the bench's P5 and P6: a 9.5 MiB plan, 10,000 apis), a
// plan+apply pair of P2 cost PostgreSQL 5.37 and 5.54 ms of CPU in auto,
// 3.68 and 3.55 ms with generic plans; on a young database the two read
// the same (docs/benchmarks.md, issue 34's fourth session). The one
// partial index (webhook_deliveries_due) is read by a statement that
// states its condition in its text, which a generic plan needs.
//
// A dsn in another query mode (cache_describe, exec, simple_protocol: the
// modes PgBouncer in transaction mode needs) is left as it is: its
// statements are unnamed, planned each time whatever this says, and
// PgBouncer refuses a startup parameter it does not know.
func GenericPlans(dsn string) (string, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "", err
	}
	if _, set := cfg.RuntimeParams["plan_cache_mode"]; set || cfg.DefaultQueryExecMode != pgx.QueryExecModeCacheStatement {
		return dsn, nil
	}
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set("plan_cache_mode", "force_generic_plan")
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return dsn + " plan_cache_mode=force_generic_plan", nil
}
