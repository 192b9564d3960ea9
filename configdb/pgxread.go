package configdb

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// A few large reads go to pgx itself, past GORM and database/sql, where
// those would copy or convert every value by reflection (a revision's
// resources, hundreds of KB, twice): withPgx lends them a connection of
// the pool, and statementSpan gives each the span GORM's OpenTelemetry
// plugin gives every statement it sees (SPEC §21: a span per SQL
// statement), which it cannot give these.

// withPgx runs f with the pgx connection of a connection of the pool, given
// back to the pool after f; f's error comes back as it is.
func (r Reader) withPgx(ctx context.Context, f func(*pgx.Conn) error) error {
	sqlDB, err := r.g.DB()
	if err != nil {
		return err
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("configdb: a PostgreSQL connection is %T, not pgx's", dc)
		}
		return f(sc.Conn())
	})
}

// statementSpan starts the span of a statement sent with withPgx: a client
// span under ctx's (from the tracer provider of ctx's span, so none and at
// no cost when the request is not traced), named and with the attributes
// GORM's plugin gives a read: db.system, db.statement (the text with its
// placeholders, never their values), db.operation, db.sql.table; end sets
// db.rows_affected and the error, and ends it.
func statementSpan(ctx context.Context, table, query string) (end func(rows int64, err error)) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return func(int64, error) {}
	}
	_, span := parent.TracerProvider().Tracer("github.com/keenauth/configplans/configdb").Start(ctx, "gorm.Row",
		trace.WithSpanKind(trace.SpanKindClient))
	return func(rows int64, err error) {
		span.SetAttributes(
			attribute.String("db.system", "postgresql"),
			attribute.String("db.statement", query),
			attribute.String("db.operation", "select"),
			attribute.String("db.sql.table", table),
			attribute.Int64("db.rows_affected", rows),
		)
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}
