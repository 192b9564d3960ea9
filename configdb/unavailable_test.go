package configdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
)

func TestInterpretErrorConnectionLostIsUnavailable(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	for _, err := range []error{
		fmt.Errorf("failed to receive message: %w", io.ErrUnexpectedEOF),
		io.EOF,
		pgconn.ErrConnClosed,
		driver.ErrBadConn,
		sql.ErrConnDone,
		sql.ErrTxDone,
		reset,
		fmt.Errorf("write: %w", syscall.EPIPE),
		fmt.Errorf("acquire: %w", context.DeadlineExceeded),
		&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"},
		&pgconn.PgError{Code: "57P05", Message: "terminating connection due to idle-session timeout"},
		&pgconn.PgError{Code: "08006"},
		&pgconn.PgError{Code: "08P01"},
		&pgconn.PgError{Code: "53300"},
		&pgconn.PgError{Code: "25P03"},
	} {
		if got := interpretError(err); !errors.Is(got, ErrUnavailable) || !errors.Is(got, err) {
			t.Errorf("interpretError(%v) = %v, want ErrUnavailable wrapping it", err, got)
		}
	}
}

func TestInterpretErrorAnswersOfTheDatabaseAreNotUnavailable(t *testing.T) {
	for _, err := range []error{
		&pgconn.PgError{Code: "23505"},
		&pgconn.PgError{Code: "42P01"},
		&pgconn.PgError{Code: "40001"},
		gorm.ErrRecordNotFound,
		errors.New("encode: bad value"),
		context.Canceled,
	} {
		if got := interpretError(err); errors.Is(got, ErrUnavailable) {
			t.Errorf("interpretError(%v) = %v, want no ErrUnavailable", err, got)
		}
	}
}
