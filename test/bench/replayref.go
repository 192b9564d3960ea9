package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The replay reference is the least a replay can do over HTTP on this
// machine: a bare net/http server in a process of its own that, for each
// request, reads the body, makes one Redis GET of the stored answer and
// writes it with the replay's headers — no router, authentication,
// fingerprint, script or log line. P3's target is set against the Redis
// GET alone; the reference says how much of a replay is HTTP and the
// process boundary, which no change to the service can remove.

// replayRefArg, as the first argument, makes the benchmark's own binary
// serve the reference instead of running the benchmark.
const replayRefArg = "-serve-replay-reference"

// serveReplayReference runs the reference server on addr over Redis
// redisURL, answering with the value of key, until it is killed.
func serveReplayReference(addr, redisURL, key string) error {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opt)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil || r.Header.Get("Authorization") == "" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		v, err := rdb.Get(r.Context(), key).Bytes()
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Idempotent-Replayed", "true")
		// As the service sends it: an answer over net/http's 2 KiB
		// buffer would otherwise go chunked.
		w.Header().Set("Content-Length", strconv.Itoa(len(v)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(v)
	})
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	return srv.ListenAndServe()
}

// reference is a running reference server: this benchmark's own binary,
// started with the argument that makes it serve a reference, in a process
// of its own (so that its CPU is its own, as keenauthd's is).
type reference struct {
	cmd  *exec.Cmd
	base string
}

// startReference starts the binary with arg, a free address and args
// (stdin, when not nil, is given on its standard input), and waits until
// it answers on that address.
func startReference(ctx context.Context, stdin []byte, arg string, args ...string) (*reference, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	ref := &reference{cmd: exec.Command(self, append([]string{arg, addr}, args...)...), base: "http://" + addr}
	ref.cmd.Stderr = os.Stderr
	if stdin != nil {
		ref.cmd.Stdin = bytes.NewReader(stdin)
	}
	if err := ref.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", arg, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return ref, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			ref.stop()
			return nil, fmt.Errorf("%s did not listen on %s", arg, addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *reference) pid() int { return r.cmd.Process.Pid }

func (r *reference) stop() {
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
}

// referenceReplay is one request shaped like a replay to the reference,
// which must answer 200 with want bytes, and its latency.
func referenceReplay(ctx context.Context, ref *reference, secret string, want int) func() (time.Duration, error) {
	a := newAPI(ref.base, 2)
	return func() (time.Duration, error) {
		r, err := a.do(ctx, http.MethodPost, "/v1/config-plans/reference:apply", secret, []byte("{}"), map[string]string{"Idempotency-Key": "bench-replay-0001"})
		if err != nil {
			return 0, err
		}
		if r.status != http.StatusOK || len(r.body) != want {
			return 0, fmt.Errorf("replay reference: %d, %d bytes: %s", r.status, len(r.body), strings.TrimSpace(clip(r.body)))
		}
		return r.took, nil
	}
}
