package faults_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/keenauth/configplans/test/procs"
	"github.com/keenauth/configplans/test/testdb"
)

var (
	seedFlag   = flag.Uint64("seed", 0, "replay the run of this seed (0: a new seed)")
	faultsFlag = flag.Int("faults", 60, "how many faults to inject")
)

// binary is keenauthd, built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(procs.Main(m, &binary))
}

// lease is the replicas' apply lease: short, so that a plan whose apply was
// lost is taken over within the run.
const lease = 3 * time.Second

// sizes are the numbers of changes of the plans applied.
var sizes = []int{1, 10, 200}

// rig is two keenauthd replicas over one database and one redis-server,
// each reached through a proxy that the faults cut.
type rig struct {
	t      *testing.T
	check  *gorm.DB // the database, read directly (application_name faults_check)
	dbName string
	pg     *testdb.Proxy
	rs     *procs.RedisServer
	redis  *testdb.Proxy
	env    []string
	secret string
	nodes  []*procs.Node
}

func newRig(t *testing.T) *rig {
	t.Helper()
	d := testdb.New(t)
	proxied, pg := d.Through(t, 0)
	rs := procs.StartRedis(t)
	redisProxy := testdb.StartProxyTo(t, rs.Addr, 0)
	u, _ := url.Parse(d.URL)
	q := u.Query()
	q.Set("application_name", "faults_check")
	u.RawQuery = q.Encode()
	check, err := testdb.Open(u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s, err := check.DB(); err == nil {
			s.Close()
		}
	})
	r := &rig{t: t, check: check, dbName: d.Name, pg: pg, rs: rs, redis: redisProxy}
	r.env = []string{
		"KEENAUTHD_DATABASE_URL=" + proxied.URL,
		"KEENAUTHD_REDIS_URL=redis://" + redisProxy.Addr() + "/0",
		"KEENAUTHD_LISTEN=127.0.0.1:0",
		"KEENAUTHD_IDEMPOTENCY_SECRET=faults-idempotency-secret",
		"KEENAUTHD_INTERNAL_TOKEN=faults-internal-token",
		"KEENAUTHD_LOG_LEVEL=info",
		"KEENAUTHD_APPLY_LEASE=" + lease.String(),
		"KEENAUTHD_RATE_LIMIT_QUOTA=1000000",
		"KEENAUTHD_INFLIGHT_LIMIT=1000",
		"KEENAUTHD_FLEET_APPLY_LIMIT=1000",
		"KEENAUTHD_SHUTDOWN_TIMEOUT=2s",
	}
	var env struct{ ID string }
	decode(t, procs.Command(t, binary, r.env, "env", "create", "--name", "Shop"), &env)
	var key struct{ Secret string }
	decode(t, procs.Command(t, binary, r.env, "key", "create", "--env", env.ID, "--permissions", "all"), &key)
	r.secret = key.Secret
	r.nodes = []*procs.Node{procs.Serve(t, binary, r.env), procs.Serve(t, binary, r.env)}
	return r
}

func decode(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// answer is an HTTP answer; err is set when none came (the process died).
type answer struct {
	Status int
	Header http.Header
	Body   []byte
	err    error
}

func (a answer) code() string {
	var p struct{ Code string }
	_ = json.Unmarshal(a.Body, &p)
	return p.Code
}

func (a answer) String() string {
	if a.err != nil {
		return "no answer: " + a.err.Error()
	}
	return fmt.Sprintf("%d %s", a.Status, bytes.TrimSpace(a.Body))
}

var client = &http.Client{Timeout: 60 * time.Second}

func (r *rig) do(n *procs.Node, method, path string, body any, key string) answer {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, n.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+r.secret)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// retryable: the contract's answers that say "try again" (§6 row 19, §9).
func retryable(a answer) bool {
	if a.Header.Get("Retry-After") == "" {
		return false
	}
	return a.Status == http.StatusServiceUnavailable && a.code() == "service_unavailable" ||
		a.Status == http.StatusConflict && a.code() == "idempotency_key_in_use"
}

// planDoc is a document of n APIs named <prefix>-<i>.
func planDoc(prefix string, n int) map[string]any {
	apis := map[string]any{}
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		apis[name] = map[string]any{"identifier": "https://api.shop.example/" + name, "display_name": "API " + name, "token_lifetime_seconds": 3600}
	}
	return map[string]any{"config": map[string]any{"apis": apis}}
}

// outcome is what one fault did and what the checks found.
type outcome struct {
	scenario string
	landed   bool // the fault fired while the apply (or plan creation) ran
	partial  bool
	twice    bool
	stuck    bool
	wrong    []string
}

// run is one fault's client: it answers the wrong answers it saw.
type run struct {
	r     *rig
	o     *outcome
	rng   *rand.Rand
	name  string
	size  int
	key   string
	plan  string
	alive func() []*procs.Node
}

// judge records a as wrong unless it is want or retryable; a missing
// answer is wrong unless the fault killed the process (killed).
func (f *run) judge(what string, a answer, want int, killed bool) {
	switch {
	case a.err != nil && killed:
	case a.err != nil, a.Status != want && !retryable(a):
		f.o.wrong = append(f.o.wrong, what+": "+a.String())
	}
}

// create creates the fault's plan, retrying the contract's retryable
// answers; it returns false when no plan could be created.
func (f *run) create(killed bool) bool {
	deadline := time.Now().Add(3*lease + 20*time.Second)
	for time.Now().Before(deadline) {
		nodes := f.alive()
		a := f.r.do(nodes[f.rng.IntN(len(nodes))], "POST", "/v1/config-plans", planDoc(f.name, f.size), f.key+"-create")
		f.judge("create", a, http.StatusCreated, killed)
		if a.Status == http.StatusCreated {
			var p struct{ ID string }
			_ = json.Unmarshal(a.Body, &p)
			f.plan = p.ID
			return true
		}
		if a.err == nil && !retryable(a) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	f.o.wrong = append(f.o.wrong, "create: no plan before the deadline")
	return false
}

// settle retries the apply with the fault's Idempotency-Key until it
// answers 200, as a client following Retry-After would.
func (f *run) settle() {
	deadline := time.Now().Add(4*lease + 20*time.Second)
	for time.Now().Before(deadline) {
		nodes := f.alive()
		a := f.r.do(nodes[f.rng.IntN(len(nodes))], "POST", "/v1/config-plans/"+f.plan+":apply", map[string]any{}, f.key)
		f.judge("retry", a, http.StatusOK, false)
		if a.Status == http.StatusOK || a.err == nil && !retryable(a) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	f.o.wrong = append(f.o.wrong, "retry: the apply did not settle before the deadline")
}

// verify reads the database: all or none of the plan's changes, one
// revision and one config.applied per applied plan and none for the others,
// no plan left applying past its lease, and both replicas serve a read.
func (f *run) verify(settled bool) {
	db := f.r.check
	count := func(q string, args ...any) int64 {
		var n int64
		if err := db.Raw(q, args...).Scan(&n).Error; err != nil {
			f.r.t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	n := count("SELECT count(*) FROM resources WHERE kind = 'api' AND key LIKE ?", f.name+"-%")
	if n != 0 && n != int64(f.size) || settled && n != int64(f.size) {
		f.o.partial = true
		f.o.wrong = append(f.o.wrong, fmt.Sprintf("%d of the %d changes visible", n, f.size))
	}
	// Every check reads the whole run with joins of grouped rows, in time
	// linear in its plans (a subquery per plan grew with the square of the
	// run and slowed a long run to minutes per hundred faults).
	const applied = `(SELECT plan_id, count(*) AS n FROM management_logs WHERE type = 'config.applied' GROUP BY plan_id)`
	if count(`SELECT count(*) FROM `+applied+` l WHERE l.n > 1`)+
		count(`SELECT count(*) FROM (SELECT plan_id FROM config_revisions GROUP BY plan_id HAVING count(*) > 1) v`) > 0 {
		f.o.twice = true
	}
	if count(`SELECT count(*) FROM config_plans p JOIN `+applied+` l ON l.plan_id = p.id WHERE p.status <> 'applied'`) > 0 {
		f.o.partial = true
		f.o.wrong = append(f.o.wrong, "a plan that is not applied has a config.applied entry")
	}
	if count(`SELECT count(*) FROM config_plans p LEFT JOIN `+applied+` l ON l.plan_id = p.id
		WHERE p.status = 'applied' AND coalesce(l.n, 0) <> 1`) > 0 {
		f.o.partial = true
		f.o.wrong = append(f.o.wrong, "an applied plan without its config.applied entry")
	}
	if count("SELECT count(*) FROM config_plans WHERE status = 'applying' AND lease_until < now() - interval '1 second'") > 0 {
		f.o.stuck = true
	}
	if f.plan != "" {
		for _, node := range f.alive() {
			// A read is not retried inside the service: over a connection
			// that a cut closed while it was idle in the pool it answers
			// 503 with Retry-After, and that connection is dropped. The
			// pool may hold up to KEENAUTHD_DB_MAX_CONNS such connections
			// (the webhook dispatcher and the streams' polls keep several
			// open beside the requests), so the client retries until a
			// fresh one answers, within 3 s.
			var a answer
			for deadline := time.Now().Add(3 * time.Second); ; {
				if a = f.r.do(node, "GET", "/v1/config-plans/"+f.plan, nil, ""); !retryable(a) || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if a.Status != http.StatusOK {
				f.o.wrong = append(f.o.wrong, "the next request: "+a.String())
			}
		}
	}
}

// terminate ends the PostgreSQL backends of the replicas (every one but
// the checker's) and reports how many it ended.
func (r *rig) terminate() int64 {
	var n int64
	_ = r.check.Raw(`SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = ? AND application_name <> 'faults_check' AND pid <> pg_backend_pid()) t`, r.dbName).Scan(&n).Error
	return n
}

// chunks measures, per plan size, how many chunks a clean plan creation
// and apply send to PostgreSQL: the range a random cut is drawn from.
func (r *rig) chunks(t *testing.T) map[int]int {
	out := map[int]int{}
	for _, size := range sizes {
		before := r.pg.Chunks()
		a := r.do(r.nodes[0], "POST", "/v1/config-plans", planDoc(fmt.Sprintf("warm%d", size), size), "")
		if a.Status != http.StatusCreated {
			t.Fatalf("warm-up plan: %s", a)
		}
		var p struct{ ID string }
		_ = json.Unmarshal(a.Body, &p)
		if a := r.do(r.nodes[0], "POST", "/v1/config-plans/"+p.ID+":apply", map[string]any{}, ""); a.Status != http.StatusOK {
			t.Fatalf("warm-up apply: %s", a)
		}
		out[size] = r.pg.Chunks() - before
	}
	return out
}

var scenarios = []string{"DB connection cut", "SIGKILL mid-apply", "Redis loss / flush"}

func TestFaults(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	fmt.Printf("faults: seed %d (replay with -seed %d), %d faults\n", seed, seed, *faultsFlag)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1|1))
	r := newRig(t)
	chunks := r.chunks(t)

	var mu sync.Mutex
	nodes := r.nodes
	all := append([]*procs.Node(nil), nodes...) // every replica started, for their logs
	flusher := r.rs.Client(t)
	var restartErr atomic.Pointer[error]
	alive := func() []*procs.Node {
		mu.Lock()
		defer mu.Unlock()
		return append([]*procs.Node(nil), nodes...)
	}
	// An interrupt (Ctrl-C) of a long run ends it after the fault in
	// progress, and the run still gives its checks and its table.
	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, os.Interrupt)
	defer signal.Stop(interrupted)
	var outcomes []outcome
faults:
	for i := range *faultsFlag {
		select {
		case <-interrupted:
			fmt.Printf("faults: interrupted after %d of %d faults; their table follows\n", i, *faultsFlag)
			t.Logf("interrupted after %d faults", i)
			break faults
		default:
		}
		o := outcome{}
		w := rng.IntN(10)
		switch {
		case w < 6:
			o.scenario = scenarios[0]
		case w < 8:
			o.scenario = scenarios[1]
		default:
			o.scenario = scenarios[2]
		}
		f := &run{r: r, o: &o, rng: rng, name: fmt.Sprintf("f%d", i), size: sizes[rng.IntN(len(sizes))],
			key: fmt.Sprintf("fault-%d-%d", seed, i), alive: alive}
		applyPath := func() string { return "/v1/config-plans/" + f.plan + ":apply" }

		switch o.scenario {
		case scenarios[0]:
			kind := rng.IntN(4)
			if kind == 0 {
				// A cut at a random chunk of the creation and the apply.
				r.pg.CutOnChunk(1 + rng.IntN(chunks[f.size]))
			}
			cuts := r.pg.Cuts()
			if !f.create(false) {
				r.pg.CutOnChunk(0)
				break
			}
			var term chan int64
			var answered atomic.Bool
			switch kind {
			case 1:
				// Just before or just after the server receives a COMMIT
				// (the claim's or the apply's).
				r.pg.CutOn(testdb.CommitMessage, rng.IntN(2) == 0)
			case 2:
				term = make(chan int64, 1)
				delay := time.Duration(rng.IntN(int(30*time.Millisecond) + f.size*int(time.Millisecond)))
				go func() {
					time.Sleep(delay)
					n := r.terminate()
					if answered.Load() {
						n = 0 // after the answer: it did not land mid-apply
					}
					term <- n
				}()
			case 3:
				// Every connection, at a random moment of the apply.
				term = make(chan int64, 1)
				delay := time.Duration(rng.IntN(int(30*time.Millisecond) + f.size*int(time.Millisecond)))
				go func() {
					time.Sleep(delay)
					r.pg.Cut()
					if answered.Load() {
						term <- 0
					} else {
						term <- 1
					}
				}()
			}
			ns := alive()
			a := r.do(ns[rng.IntN(len(ns))], "POST", applyPath(), map[string]any{}, f.key)
			answered.Store(true)
			f.judge("apply", a, http.StatusOK, false)
			r.pg.CutOn(nil, false)
			o.landed = r.pg.Cuts() > cuts || a.Status != http.StatusOK
			if term != nil {
				select {
				case n := <-term:
					o.landed = o.landed || n > 0
				case <-time.After(time.Second):
					f.o.wrong = append(f.o.wrong, "the fault did not end")
				}
			}
			f.verify(false)
			if a.Status != http.StatusOK {
				f.settle()
			}
		case scenarios[1]:
			if !f.create(false) {
				break
			}
			mu.Lock()
			victim := rng.IntN(len(nodes))
			target := nodes[victim]
			mu.Unlock()
			done := make(chan answer, 1)
			go func() { done <- r.do(target, "POST", applyPath(), map[string]any{}, f.key) }()
			time.Sleep(time.Duration(rng.IntN(int(20*time.Millisecond) + f.size*int(200*time.Microsecond))))
			target.Kill()
			a := <-done
			f.judge("apply", a, http.StatusOK, true)
			o.landed = a.err != nil
			// The replacement replica starts while the other takes over.
			mu.Lock()
			nodes = append(append([]*procs.Node(nil), nodes[:victim]...), nodes[victim+1:]...)
			mu.Unlock()
			f.verify(false)
			if a.Status != http.StatusOK {
				f.settle()
			}
			fresh := procs.Serve(t, binary, r.env)
			mu.Lock()
			nodes = append(nodes, fresh)
			mu.Unlock()
			all = append(all, fresh)
		case scenarios[2]:
			if !f.create(false) {
				break
			}
			// The server's data flushed; the server killed and started
			// again (empty, as it keeps nothing on disk); or every
			// connection to it refused for a moment.
			loss := rng.IntN(3)
			delay := time.Duration(rng.IntN(int(20*time.Millisecond) + f.size*int(200*time.Microsecond)))
			fired := make(chan struct{})
			go func() {
				defer close(fired)
				time.Sleep(delay)
				switch loss {
				case 0:
					_ = flusher.FlushDB(context.Background()).Err()
				case 1:
					r.rs.Kill()
					time.Sleep(300 * time.Millisecond)
					if err := r.rs.Restart(); err != nil {
						restartErr.Store(&err)
					}
				default:
					r.redis.SetDown(true)
					time.Sleep(300 * time.Millisecond)
					r.redis.SetDown(false)
				}
			}()
			ns := alive()
			a := r.do(ns[rng.IntN(len(ns))], "POST", applyPath(), map[string]any{}, f.key)
			f.judge("apply", a, http.StatusOK, false)
			select {
			case <-fired:
				o.landed = true
			default:
			}
			<-fired
			if p := restartErr.Load(); p != nil {
				t.Fatalf("fault %d: %v", i, *p)
			}
			f.verify(false)
			// The retry, with the same key, after the loss.
			f.settle()
		}
		if f.plan != "" {
			f.verify(true)
		}
		outcomes = append(outcomes, o)
	}

	panics := 0
	for _, n := range all {
		panics += strings.Count(n.Logs(), `"msg":"panic"`)
	}
	table := report(outcomes, panics)
	fmt.Print(table)
	t.Log("\n" + table)
	for i, o := range outcomes {
		for _, w := range o.wrong {
			t.Errorf("fault %d (%s): %s", i, o.scenario, w)
		}
		if o.twice {
			t.Errorf("fault %d (%s): a plan applied twice", i, o.scenario)
		}
		if o.stuck {
			t.Errorf("fault %d (%s): a plan stuck in applying past its lease", i, o.scenario)
		}
	}
	if panics > 0 {
		t.Errorf("%d panics logged", panics)
	}
	if t.Failed() {
		t.Logf("replay with -seed %d", seed)
	}
}

// report is the table of the outcomes, one row per scenario.
func report(outcomes []outcome, panics int) string {
	type row struct{ faults, landed, partial, twice, stuck, wrong int }
	rows := map[string]*row{}
	for _, s := range scenarios {
		rows[s] = &row{}
	}
	for _, o := range outcomes {
		w := rows[o.scenario]
		w.faults++
		if o.landed {
			w.landed++
		}
		if o.partial {
			w.partial++
		}
		if o.twice {
			w.twice++
		}
		if o.stuck {
			w.stuck++
		}
		w.wrong += len(o.wrong)
	}
	var b strings.Builder
	b.WriteString("| scenario | faults | landed mid-apply | partial writes | applied twice | stuck plans | panics | wrong answers |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for i, s := range scenarios {
		w := rows[s]
		p := 0
		if i == 0 {
			p = panics // panics are counted over the run's logs
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %d |\n", s, w.faults, w.landed, w.partial, w.twice, w.stuck, p, w.wrong)
	}
	return b.String()
}
