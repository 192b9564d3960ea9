package configdb

import "testing"

func TestGenericPlans(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ dsn, want string }{
		{"postgres://u@h:5432/db?sslmode=disable", "postgres://u@h:5432/db?plan_cache_mode=force_generic_plan&sslmode=disable"},
		{"postgresql://u@h/db", "postgresql://u@h/db?plan_cache_mode=force_generic_plan"},
		{"host=h user=u dbname=db", "host=h user=u dbname=db plan_cache_mode=force_generic_plan"},
		{"postgres://u@h/db?default_query_exec_mode=cache_statement", "postgres://u@h/db?default_query_exec_mode=cache_statement&plan_cache_mode=force_generic_plan"},
		// Chosen by the URL: kept.
		{"postgres://u@h/db?plan_cache_mode=auto", "postgres://u@h/db?plan_cache_mode=auto"},
		{"host=h plan_cache_mode=force_custom_plan", "host=h plan_cache_mode=force_custom_plan"},
		// Unnamed statements (PgBouncer's modes): nothing to choose, and
		// PgBouncer refuses the parameter.
		{"postgres://u@h/db?default_query_exec_mode=cache_describe", "postgres://u@h/db?default_query_exec_mode=cache_describe"},
		{"postgres://u@h/db?default_query_exec_mode=exec", "postgres://u@h/db?default_query_exec_mode=exec"},
		{"postgres://u@h/db?default_query_exec_mode=simple_protocol", "postgres://u@h/db?default_query_exec_mode=simple_protocol"},
	} {
		got, err := GenericPlans(c.dsn)
		if err != nil || got != c.want {
			t.Errorf("GenericPlans(%q) = %q, %v; want %q", c.dsn, got, err, c.want)
		}
	}
	if _, err := GenericPlans("postgres://u@h/db?default_query_exec_mode=nonsense"); err == nil {
		t.Error("a query mode pgx does not know: no error")
	}
}
