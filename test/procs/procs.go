// Package procs runs the real keenauthd binary and redis-servers for the
// tests that drive whole processes (test/e2e, test/faults): it builds the
// binary, starts processes until the test ends, and waits for what they
// print with deadlines.
package procs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keenauth/configplans/test/apitest"
	"github.com/keenauth/configplans/test/testdb"
)

// BuildKeenauthd builds keenauthd into dir and returns its path.
func BuildKeenauthd(dir string) (string, error) {
	bin := filepath.Join(dir, "keenauthd")
	build := exec.Command("go", "build", "-o", bin, "github.com/keenauth/configplans/cmd/keenauthd")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	return bin, build.Run()
}

// Main is the TestMain of a package whose tests run keenauthd: it builds the
// binary into a temporary directory, sets *binary to its path, runs the
// tests and removes the directory. It returns the code for os.Exit.
func Main(m *testing.M, binary *string) int {
	dir, err := os.MkdirTemp("", "keenauthd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if *binary, err = BuildKeenauthd(dir); err != nil {
		fmt.Fprintln(os.Stderr, "build keenauthd:", err)
		return 1
	}
	return m.Run()
}

// SyncBuffer is a goroutine-safe output sink (the API harness's own).
type SyncBuffer = apitest.SyncBuffer

// Node is one keenauthd process.
type Node struct {
	URL    string
	stdout *SyncBuffer
	logs   *SyncBuffer
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start runs binary with args and env until t ends (SIGINT, then SIGKILL
// after 10 s), without waiting for anything.
func Start(t testing.TB, binary string, env []string, args ...string) *Node {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = env
	cmd.SysProcAttr = testdb.ChildAttr()
	n := &Node{stdout: &SyncBuffer{}, logs: &SyncBuffer{}, cmd: cmd, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = n.stdout, n.logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start keenauthd %s: %v", strings.Join(args, " "), err)
	}
	go func() {
		_ = cmd.Wait()
		close(n.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-n.exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-n.exited
		}
	})
	return n
}

// Serve runs keenauthd serve until t ends, and waits until it listens and
// has logged so: every line it logs at start-up is in Logs then. Each
// output is read by its own copying goroutine, so the "listening on" of
// stdout may be seen before the lines logged before it to stderr; both are
// polled with a deadline.
func Serve(t testing.TB, binary string, env []string) *Node {
	t.Helper()
	n := Start(t, binary, env, "serve")
	var addr string
	n.WaitFor(t, "keenauthd serve to print its address", func() bool {
		for _, line := range strings.Split(n.Stdout(), "\n") {
			var l struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "listening on" && l.Addr != "" {
				addr = l.Addr
				return true
			}
		}
		return false
	})
	n.URL = "http://" + addr
	n.WaitFor(t, "keenauthd serve to log that it listens", func() bool {
		return slices.ContainsFunc(n.LogLines(), func(l LogLine) bool { return l.Msg == "keenauthd listening" })
	})
	return n
}

// PID is the process's id.
func (n *Node) PID() int { return n.cmd.Process.Pid }

// Stdout returns what the process printed so far.
func (n *Node) Stdout() string { return n.stdout.String() }

// Logs returns what the process logged so far.
func (n *Node) Logs() string { return n.logs.String() }

// Kill ends the process with SIGKILL and waits for it.
func (n *Node) Kill() {
	_ = n.cmd.Process.Kill()
	<-n.exited
}

// Stop sends sig to the process (SIGTERM: what an orchestrator sends) and
// waits until it exits, failing t after 30 s.
func (n *Node) Stop(t testing.TB, sig os.Signal) {
	t.Helper()
	if err := n.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal keenauthd: %v", err)
	}
	select {
	case <-n.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("keenauthd did not exit within 30 s of %v; logs:\n%s", sig, n.Logs())
	}
}

// WaitFor polls cond until it holds, failing t when the process exits
// first or after 30 s.
func (n *Node) WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		select {
		case <-n.exited:
			if cond() {
				return
			}
			t.Fatalf("keenauthd exited while waiting for %s; stdout:\n%s\nlogs:\n%s", what, n.Stdout(), n.Logs())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; stdout:\n%s\nlogs:\n%s", what, n.Stdout(), n.Logs())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// LogLine is one JSON line of a process's logs.
type LogLine struct {
	Level  string `json:"level"`
	Msg    string `json:"msg"`
	Policy string `json:"policy"`
}

// LogLines decodes the complete lines logged so far; others are skipped.
func (n *Node) LogLines() []LogLine {
	var out []LogLine
	for _, raw := range strings.Split(n.Logs(), "\n") {
		var l LogLine
		if json.Unmarshal([]byte(raw), &l) == nil {
			out = append(out, l)
		}
	}
	return out
}

// Command runs a one-shot keenauthd command and returns its standard
// output, failing t when it fails.
func Command(t testing.TB, binary string, env []string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("keenauthd %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}
