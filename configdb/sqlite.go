package configdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	gosqlite "github.com/glebarez/go-sqlite"
	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// The embedded storage of dev mode is SQLite (pure Go, no cgo). The domain
// logic is the same over both dialects; the few statements SQLite spells
// differently ask isSQLite.
//
// How SQLite keeps the PostgreSQL contract:
//   - SQLite has one writer at a time and its transactions are serializable,
//     whatever isolation level is asked for (the driver ignores it). The
//     SQLite dialector drops locking clauses (SELECT … FOR UPDATE).
//   - A transaction reads from a snapshot (WAL journal: readers never wait)
//     and takes the write lock at its first write. If another transaction
//     committed since its snapshot, or holds the lock, that write fails with
//     SQLITE_BUSY: a retry (interpretError), as a PostgreSQL serialization
//     failure is. So an apply that waits inside its transaction holds no
//     lock before it writes, and plan creation does not wait for it.
//   - inTx runs every retry under the write lock from its first statement
//     (lockForRetry): a retried transaction cannot lose again, it waits up to
//     busyTimeout for the lock instead. That is how the applies of one
//     environment end up serialised, as FOR UPDATE does on PostgreSQL.
//   - Times are written as UTC text ("2006-01-02 15:04:05.999999999+00:00",
//     trailing zeros trimmed) into DATETIME columns, which the driver reads
//     back as times. With one offset everywhere, text order is time order, so
//     comparisons in WHERE clauses and MAX() work on the text: every time
//     argument is therefore turned to UTC before it reaches the driver.
//   - Foreign keys are enforced, as PostgreSQL does.

// busyTimeout is how long a transaction waits for the write lock.
const busyTimeout = 10 * time.Second

// isSQLite reports whether db is the embedded storage.
func isSQLite(db *gorm.DB) bool { return db.Dialector.Name() == "sqlite" }

// OpenSQLite opens (creating it when missing) the SQLite database file at
// path. The caller migrates it with migrations.UpSQLite.
func OpenSQLite(path string) (*gorm.DB, error) {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("sqlite: %q is not a usable database path", path)
	}
	dsn := path + "?_txlock=deferred" +
		fmt.Sprintf("&_pragma=busy_timeout(%d)", busyTimeout.Milliseconds()) +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)"
	sqlDB := sql.OpenDB(utcConnector{dsn: dsn, d: &gosqlite.Driver{}})
	db, err := gorm.Open(sqlite.Dialector{Conn: sqlDB}, &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true,
		NowFunc: func() time.Time { return time.Now().UTC() }})
	if err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	if err := sqlDB.Ping(); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	return db, nil
}

// lockForRetry takes SQLite's write lock, waiting for it up to busyTimeout:
// a write that matches no row still begins the write transaction.
func lockForRetry(tx *gorm.DB) error {
	return tx.Exec("UPDATE environments SET generation = generation WHERE 0 = 1").Error
}

// interpretSQLite translates an SQLite error code: the write lock not
// obtained in time is a retry, an unreadable or full disk is unavailable.
// It returns nil when err is not SQLite's.
func interpretSQLite(err error) error {
	var se *gosqlite.Error
	if !errors.As(err, &se) {
		return nil
	}
	switch se.Code() & 0xff { // the primary code of an extended one
	case 5, 6: // SQLITE_BUSY, SQLITE_LOCKED
		return fmt.Errorf("%w: %w", errRetry, err)
	case 10, 13, 14: // SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// utcConnector opens driver connections that turn every time argument to
// UTC (see the package's SQLite notes).
type utcConnector struct {
	dsn string
	d   *gosqlite.Driver
}

func (c utcConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.d.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return utcConn{conn}, nil
}

func (c utcConnector) Driver() driver.Driver { return c.d }

// utcConn forwards to the driver's connection, which implements the
// context-aware interfaces below.
type utcConn struct{ driver.Conn }

// CheckNamedValue implements driver.NamedValueChecker.
func (utcConn) CheckNamedValue(nv *driver.NamedValue) error {
	switch t := nv.Value.(type) {
	case time.Time:
		nv.Value = t.UTC()
		return nil
	case *time.Time:
		if t != nil {
			nv.Value = t.UTC()
			return nil
		}
	}
	return driver.ErrSkip
}

func (c utcConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c utcConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c utcConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

func (c utcConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c utcConn) Ping(ctx context.Context) error { return c.Conn.(driver.Pinger).Ping(ctx) }
