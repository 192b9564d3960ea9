package testdb

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RequireBinary returns the path of an external program a test starts
// (redis-server, pgbouncer). When it is missing the test is skipped, with the
// command that installs it, unless CI is set: there a missing program fails.
func RequireBinary(t testing.TB, name, install string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("testdb: %s is not installed (CI is set, so this fails instead of skipping): %s", name, install)
	}
	t.Skipf("testdb: %s is not installed; %s (under CI=true this fails)", name, install)
	return ""
}

// Process is an external program started by a test, stopped when the test
// ends (and killed with the test binary should it die first, on Linux).
type Process struct {
	cmd  *exec.Cmd
	out  *syncOutput
	done chan struct{}
	err  error
	stop sync.Once
}

type syncOutput struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *syncOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.b.Len() < 1<<20 {
		o.b.Write(p)
	}
	return len(p), nil
}

func (o *syncOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// StartProcess runs path with args in dir; the process is stopped in
// t.Cleanup.
func StartProcess(t testing.TB, dir, path string, args ...string) *Process {
	t.Helper()
	return startProcess(t, false, dir, path, args...)
}

// StartUnprivileged is StartProcess for a program that refuses to run as
// root (pgbouncer): when the tests run as root it runs as nobody, so its
// files must be readable by everyone.
func StartUnprivileged(t testing.TB, dir, path string, args ...string) *Process {
	t.Helper()
	return startProcess(t, true, dir, path, args...)
}

func startProcess(t testing.TB, unprivileged bool, dir, path string, args ...string) *Process {
	t.Helper()
	p := &Process{cmd: exec.Command(path, args...), out: &syncOutput{}, done: make(chan struct{})}
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = dieWithParent(unprivileged && os.Getuid() == 0)
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("testdb: start %s: %v", path, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.Stop)
	return p
}

// Stop terminates the process and waits for it (SIGKILL after 5 s).
func (p *Process) Stop() {
	p.stop.Do(func() {
		select {
		case <-p.done:
			return
		default:
		}
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
}

// Kill ends the process at once (SIGKILL), as a crash would.
func (p *Process) Kill() {
	p.stop.Do(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Output is what the process printed so far (its first MiB).
func (p *Process) Output() string { return p.out.String() }

// FreePort returns a TCP port of 127.0.0.1 that nothing listens on, nor on
// port+offset when offset is not 0 (Redis Cluster's bus port is port+10000).
func FreePort(t testing.TB, offset int) int {
	t.Helper()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("testdb: free port: %v", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		if offset == 0 {
			return port
		}
		if port+offset > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+offset))
		if err != nil {
			continue
		}
		_ = bus.Close()
		return port
	}
	t.Fatalf("testdb: no free port (with port+%d free too)", offset)
	return 0
}

// WaitFor polls cond every 50 ms until it holds or timeout passes; then it
// fails t with what.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("testdb: %s: still not so after %s: %v", what, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// ChildAttr is how every program a test starts is started (keenauthd as
// well as the servers of this package): killed when the test binary dies,
// and in a process group of its own, out of reach of a Ctrl-C meant for
// the test.
func ChildAttr() *syscall.SysProcAttr { return dieWithParent(false) }
