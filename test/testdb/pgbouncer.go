package testdb

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

const pgbouncerInstall = "install PgBouncer (Debian: apt-get install -y pgbouncer, or make pgbouncer)"

// PgBouncer is a PgBouncer of a test's own, in transaction mode, in front
// of the test PostgreSQL: every database of the server is reachable through
// it under its own name.
type PgBouncer struct {
	Addr string
	Proc *Process
}

// StartPgBouncer starts PgBouncer (pool_mode = transaction) on a free port,
// with its ini and auth file in a directory of its own; it is stopped when
// t ends.
func StartPgBouncer(t testing.TB) *PgBouncer {
	t.Helper()
	bin := RequireBinary(t, "pgbouncer", pgbouncerInstall)
	server, err := url.Parse(AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	user := server.User.Username()
	// Not t.TempDir: PgBouncer refuses to run as root, so it may run as
	// nobody, which must read these files.
	dir, err := os.MkdirTemp("", "keenauth-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	port := FreePort(t, 0)
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
max_client_conn = 500
default_pool_size = 20
ignore_startup_parameters = extra_float_digits
server_reset_query =
logfile =
pidfile =
`, server.Hostname(), server.Port(), port, filepath.Join(dir, "userlist.txt"))
	files := map[string]string{"pgbouncer.ini": ini, "userlist.txt": strconv.Quote(user) + ` ""` + "\n"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b := &PgBouncer{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	b.Proc = StartUnprivileged(t, dir, bin, filepath.Join(dir, "pgbouncer.ini"))
	WaitFor(t, 10*time.Second, "PgBouncer at "+b.Addr+" answers", func() error {
		if b.Proc.Exited() {
			t.Fatalf("testdb: pgbouncer exited:\n%s", b.Proc.Output())
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, b.URLFor("postgres"))
		if err != nil {
			return err
		}
		return c.Close(ctx)
	})
	return b
}

// URLFor is the URL of database name through PgBouncer, with the query
// mode that a transaction pooler needs (no named prepared statement
// outlives its transaction): default_query_exec_mode=cache_describe.
func (b *PgBouncer) URLFor(name string) string {
	u, _ := url.Parse(URLFor(name))
	u.Host = b.Addr
	q := u.Query()
	q.Set("default_query_exec_mode", "cache_describe")
	u.RawQuery = q.Encode()
	return u.String()
}

// Through returns d as seen through PgBouncer: same database, its URL and a
// handle (closed when t ends) through the pooler.
func (b *PgBouncer) Through(t testing.TB, d *Database) *Database {
	t.Helper()
	u := b.URLFor(d.Name)
	db, err := Open(u)
	if err != nil {
		t.Fatalf("testdb: open %s through PgBouncer: %v", d.Name, err)
	}
	t.Cleanup(func() {
		if s, err := db.DB(); err == nil {
			s.Close()
		}
	})
	return &Database{Name: d.Name, URL: u, DB: db}
}

// ThroughPgBouncer reports whether the API tests run their databases
// through a PgBouncer of their own (KEENAUTH_TEST_PGBOUNCER=1).
func ThroughPgBouncer() bool { return os.Getenv("KEENAUTH_TEST_PGBOUNCER") == "1" }
