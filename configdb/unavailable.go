package configdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

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

func isConnectError(err error) bool {
	var ce *pgconn.ConnectError
	return errors.As(err, &ce)
}

// connectionLost reports whether err is a failure of the connection to
// PostgreSQL rather than an answer of the database: the server cannot be
// reached, the connection broke (I/O error, closed or bad connection), the
// server ended the session (SQLSTATE classes 08 and 57P, too many
// connections, an idle-in-transaction timeout), or no connection or answer
// came before the deadline (a pool acquire timeout included). Such a
// failure says nothing about the request: the client may retry it.
func connectionLost(err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return lostSQLState(pe.Code)
	}
	var ne net.Error
	var oe *net.OpError
	var ce *pgconn.ConnectError
	switch {
	case errors.As(err, &ne), errors.As(err, &oe), errors.As(err, &ce):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, driver.ErrBadConn),
		errors.Is(err, sql.ErrConnDone), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE):
		return true
	case errors.Is(err, context.DeadlineExceeded), pgconn.Timeout(err):
		return true
	case errors.Is(err, sql.ErrTxDone):
		// database/sql rolled the transaction back under us: its context
		// ended or its connection went away before COMMIT.
		return true
	}
	return false
}

// lostSQLState reports whether a SQLSTATE says the session is gone or
// could not be had: class 08 (connection exception), 57P (the server shut
// the session down or cannot take it yet), 57014 (a statement timeout),
// 53300 (too many connections), 25P03 (idle-in-transaction timeout).
func lostSQLState(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"), strings.HasPrefix(code, "57P"):
		return true
	}
	switch code {
	case "57014", "53300", "25P03":
		return true
	}
	return false
}
