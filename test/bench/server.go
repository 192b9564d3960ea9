package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// server is a keenauthd serve child process over the benchmark's own
// PostgreSQL database and Redis database number.
type server struct {
	bin       string
	env       []string
	base      string // http://127.0.0.1:PORT
	debugBase string // pprof
	cmd       *exec.Cmd
	logPath   string
	done      chan error
}

// buildServer builds ./cmd/keenauthd of the module at root into dir.
func buildServer(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "keenauthd")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/keenauthd")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/keenauthd: %w\n%s", err, out)
	}
	return bin, nil
}

// moduleRoot is the directory of the go.mod of the working directory.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run the benchmark inside the module (go run ./test/bench)")
	}
	return filepath.Dir(mod), nil
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// serverEnv is the environment of every keenauthd child: the caller's,
// less its KEENAUTHD_* and OTEL_* variables (no tracing unless a run asks
// for it), plus the benchmark's. The limits are
// raised far above what the scenarios send, so that no 429 or 503 of §10
// shapes a figure.
func serverEnv(dbURL, redisURL, listen, debug string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KEENAUTHD_") && !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	return append(env,
		"KEENAUTHD_DATABASE_URL="+dbURL,
		"KEENAUTHD_REDIS_URL="+redisURL,
		"KEENAUTHD_LISTEN="+listen,
		"KEENAUTHD_DEBUG_LISTEN="+debug,
		"KEENAUTHD_IDEMPOTENCY_SECRET=bench-idempotency-secret",
		"KEENAUTHD_RATE_LIMIT_QUOTA=10000000",
		"KEENAUTHD_PREVIEW_RATE_LIMIT_QUOTA=10000000",
		"KEENAUTHD_INFLIGHT_LIMIT=10000",
		"KEENAUTHD_FLEET_APPLY_LIMIT=10000",
		// P11 puts the rules of an environment's policies.
		"KEENAUTHD_INTERNAL_TOKEN="+internalToken,
	)
}

// startServer runs `keenauthd serve` and waits until /readyz answers 200.
// Its logs go to logPath; extraEnv adds variables (OTEL_* for tracing).
func startServer(ctx context.Context, bin, dbURL, redisURL, logPath string, extraEnv ...string) (*server, error) {
	listen, err := freePort()
	if err != nil {
		return nil, err
	}
	debug, err := freePort()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	s := &server{bin: bin, env: append(serverEnv(dbURL, redisURL, listen, debug), extraEnv...), base: "http://" + listen,
		debugBase: "http://" + debug, logPath: logPath, done: make(chan error, 1)}
	s.cmd = exec.Command(bin, "serve")
	s.cmd.Env = s.env
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start keenauthd: %w", err)
	}
	go func() { s.done <- s.cmd.Wait(); logf.Close() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-s.done:
			s.done <- err
			return nil, fmt.Errorf("keenauthd serve exited at start (%v); its log:\n%s", err, s.logTail())
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := http.Get(s.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("keenauthd serve not ready after 60s; its log:\n%s", s.logTail())
		}
	}
}

// stop ends the server with SIGTERM (a graceful drain) and waits for it.
func (s *server) stop() {
	if s == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

func (s *server) pid() int { return s.cmd.Process.Pid }

func (s *server) logTail() string {
	b, _ := os.ReadFile(s.logPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// cli runs a keenauthd command (env create, key create) against the
// server's database and decodes its JSON output into out.
func (s *server) cli(ctx context.Context, out any, args ...string) error {
	cmd := exec.CommandContext(ctx, s.bin, args...)
	cmd.Env = s.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("keenauthd %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return json.Unmarshal(stdout.Bytes(), out)
}

// envKey is an environment and an all-permissions API key of it.
type envKey struct {
	EnvID  string
	KeyID  string
	Secret string
}

// newEnv creates an environment and a key with every permission, with the
// operator's commands of §11.
func (s *server) newEnv(ctx context.Context, name string) (envKey, error) {
	var env struct{ ID string }
	if err := s.cli(ctx, &env, "env", "create", "--name", name); err != nil {
		return envKey{}, err
	}
	var key struct{ ID, Secret string }
	if err := s.cli(ctx, &key, "key", "create", "--env", env.ID, "--permissions", "all"); err != nil {
		return envKey{}, err
	}
	return envKey{EnvID: env.ID, KeyID: key.ID, Secret: key.Secret}, nil
}

// newEnvs creates n environments named prefix-i, a few at a time.
func (s *server) newEnvs(ctx context.Context, prefix string, n int) ([]envKey, error) {
	out := make([]envKey, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i], errs[i] = s.newEnv(ctx, fmt.Sprintf("%s-%d", prefix, i))
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// procStatus reads a kB field of /proc/<pid>/status in bytes.
func (s *server) procStatus(field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", s.pid()))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", s.pid(), field)
}

// cpuTime is the CPU time the server's threads have run, in nanoseconds
// (the sum of the first field of every /proc/<pid>/task/<tid>/schedstat;
// a thread that ended in between is left out).
func (s *server) cpuTime() (time.Duration, error) {
	dir := fmt.Sprintf("/proc/%d/task", s.pid())
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, fmt.Errorf("%s/%s/schedstat: %q", dir, t.Name(), b)
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, err
		}
		sum += time.Duration(ns)
	}
	return sum, nil
}

// resetPeakRSS resets VmHWM to the current RSS (Linux ≥ 4.0, clear_refs 5),
// so that the next reading is the peak of what runs in between.
func (s *server) resetPeakRSS() error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", s.pid()), []byte("5"), 0)
}

// cpuProfile takes a CPU profile of the server for d (pprof on
// KEENAUTHD_DEBUG_LISTEN) and writes it to path.
func (s *server) cpuProfile(ctx context.Context, d time.Duration, path string) error {
	return s.fetchProfile(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(d.Seconds())), path)
}

func (s *server) fetchProfile(ctx context.Context, route, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.debugBase+route, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s: %s", route, resp.Status, b)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// envList is the value of a repeatable NAME=VALUE flag.
type envList []string

func (l *envList) String() string { return strings.Join(*l, " ") }

func (l *envList) Set(v string) error {
	if name, _, ok := strings.Cut(v, "="); !ok || name == "" {
		return fmt.Errorf("%q is not NAME=VALUE", v)
	}
	*l = append(*l, v)
	return nil
}
