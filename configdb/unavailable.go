package configdb

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Causes of ErrUnavailable, named in the log line of a 503 so that an
// operator sees why the directory could not answer.
const (
	// CauseTooManyConnections: PostgreSQL (or a pooler in front of it)
	// refused a new connection: max_connections, or a role's or database's
	// connection limit, is reached (SQLSTATE 53300). Replicas ×
	// KEENAUTHD_DB_MAX_CONNS must stay under it.
	CauseTooManyConnections = "too_many_connections"
	// CauseCannotConnect: no connection could be opened (refused, DNS,
	// network, authentication service down).
	CauseCannotConnect = "cannot_connect"
	// CauseServerShutdown: the server ended the connection (administrator
	// command, crash recovery, shutdown).
	CauseServerShutdown = "server_shutdown"
	// CauseTimeout: a statement, or the wait for a pooled connection, ran
	// out of time.
	CauseTimeout = "timeout"
	// CauseContention: serialization failures or deadlocks on every attempt.
	CauseContention = "contention"
	// CauseOther: any other unavailability.
	CauseOther = "other"
)

// UnavailableCause names why err made the directory unavailable, or returns
// "" when err is not ErrUnavailable.
func UnavailableCause(err error) string {
	if !errors.Is(err, ErrUnavailable) {
		return ""
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "53300" || strings.HasPrefix(pe.Code, "53"):
			return CauseTooManyConnections
		case strings.HasPrefix(pe.Code, "57P"):
			return CauseServerShutdown
		case strings.HasPrefix(pe.Code, "08"):
			return CauseCannotConnect
		case pe.Code == "40001" || pe.Code == "40P01":
			return CauseContention
		case pe.Code == "57014":
			return CauseTimeout
		}
	}
	// PgBouncer refuses a client past its limits with a plain message.
	if msg := err.Error(); strings.Contains(msg, "no more connections allowed") || strings.Contains(msg, "too many clients") {
		return CauseTooManyConnections
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err):
		return CauseTimeout
	case isConnectError(err):
		return CauseCannotConnect
	case errors.Is(err, errRetry):
		return CauseContention
	}
	return CauseOther
}
