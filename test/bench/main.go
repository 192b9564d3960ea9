// Command bench measures keenauthd against lower bounds measured in the
// same run: apply speed by plan size (P1), throughput and latency under
// concurrency (P2), idempotent replays (P3), plan creation (P4), peak
// memory near the 10 MiB limit (P5), scaling with the size of the
// environment (P6), a narrow key's plan list (P7) and the reviewing
// endpoints: preview (P8), rebase (P9) and revision diff (P10), plan
// creation under 50 guardrail rules (P11); then P1
// and P2 once more with tracing exported (P1T, P2T, SPEC §21).
//
// It builds ./cmd/keenauthd, runs `keenauthd serve` as a child process over
// a PostgreSQL database of its own (dropped at the end) and a Redis
// database number of its own (flushed at start and end), creates
// environments and keys with `keenauthd env create` / `key create`, prints a
// table and writes the figures as JSON.
//
//	go run ./test/bench -out bench.json          (make bench)
//	go run ./test/bench -quick                   a smoke run of every scenario
//	go run ./test/bench -only P3 -profile /tmp/p a CPU profile of each missed scenario
//
// docs/benchmarks.md says what each scenario measures and holds the
// recorded figures.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/keenauth/configplans/configdb"
)

// options are the command's flags and what -quick shrinks.
type options struct {
	out        string
	quick      bool
	only       map[string]bool
	profileDir string
	profileFor time.Duration
	p5HeapDir  string
	keep       bool
	tracing    bool
	pgAdmin    string
	redisAddr  string
	redisDB    int
	pgLog      bool
	pgLogTop   int
	pgLogFile  string
	// serverEnv are variables given to every keenauthd the bench starts
	// (-server-env), after its own: an A/B run of a setting.
	serverEnv envList

	p1Reps      int
	p2Duration  time.Duration
	p3Requests  int
	p5Revision  int // bytes of the revision of P5's plan
	p6Others    int
	p6Reps      int
	p6Revisions int
	p7Plans     int
	p7Reps      int
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&o.out, "out", "bench.json", "where to write the figures as JSON")
	fs.BoolVar(&o.quick, "quick", false, "a smoke run: fewer repetitions, shorter loops, smaller environments (figures not comparable)")
	only := fs.String("only", "", "comma-separated scenarios to run (P1,P2,P3,P5,P6,P7,P8,P11,P12,P13,P14; P1 also gives P4, P8 also P9 and P10)")
	fs.StringVar(&o.profileDir, "profile", "", "directory: take a CPU profile of the server for each scenario that misses its target")
	fs.DurationVar(&o.profileFor, "profile-for", 10*time.Second, "length of each CPU profile")
	fs.StringVar(&o.p5HeapDir, "p5-heap", "", "directory: write the heap profiles of P5's fresh server after its plan creation and after its apply (P5.heap.plan.pprof, P5.heap.apply.pprof; in use as of each phase's last collection)")
	fs.BoolVar(&o.keep, "keep", false, "keep the benchmark's database (for inspection)")
	fs.BoolVar(&o.tracing, "tracing", true, "run P1 and P2 once more against a keenauthd exporting every span to a local OTLP/HTTP receiver (rows P1T, P2T)")
	fs.StringVar(&o.pgAdmin, "pg", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "PostgreSQL URL used to create and drop the benchmark's database")
	fs.StringVar(&o.redisAddr, "redis", "127.0.0.1:6379", "Redis address")
	fs.IntVar(&o.redisDB, "redis-db", 12, "Redis database number of the benchmark (flushed at start and end; never 0)")
	fs.BoolVar(&o.pgLog, "pg-log", false, "log every statement of the bench's database (ALTER DATABASE … SET log_min_duration_statement = 0, reset at the end) and print PostgreSQL's time per statement for each scenario")
	fs.IntVar(&o.pgLogTop, "pg-log-top", 15, "with -pg-log: how many statements to print per scenario (by total time)")
	fs.StringVar(&o.pgLogFile, "pg-log-file", "", "with -pg-log: the server's log file as the server sees it (default: pg_current_logfile(), else /var/log/postgresql/postgresql-MAJOR-main.log)")
	fs.Var(&o.serverEnv, "server-env", "NAME=VALUE for every keenauthd the bench starts, after its own settings (repeatable; e.g. KEENAUTHD_PLAN_CACHE_MIB=0)")
	p2 := fs.Duration("p2-duration", 0, "length of each P2 loop (default 20s, -quick 3s)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.redisDB == 0 {
		return o, errors.New("-redis-db 0 is shared by the test suites and is never flushed: choose another")
	}
	o.only = map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		if s = strings.ToUpper(strings.TrimSpace(s)); s != "" {
			o.only[s] = true
		}
	}
	o.p1Reps, o.p2Duration, o.p3Requests, o.p5Revision, o.p6Others, o.p6Reps, o.p6Revisions = 5, 20*time.Second, 2000, 9_900_000, 10_000, 5, 50
	if o.quick {
		o.p1Reps, o.p2Duration, o.p3Requests, o.p5Revision, o.p6Others, o.p6Reps = 2, 3*time.Second, 300, 1<<20, 1000, 2
	}
	o.p7Plans, o.p7Reps = 1000, 200
	if o.quick {
		o.p7Plans, o.p7Reps = 200, 40
	}
	if *p2 > 0 {
		o.p2Duration = *p2
	}
	return o, nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) == 5 && os.Args[1] == replayRefArg {
		if err := serveReplayReference(os.Args[2], os.Args[3], os.Args[4]); err != nil {
			fmt.Fprintln(os.Stderr, "bench: replay reference:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) == 4 && os.Args[1] == pairRefArg {
		if err := servePairReference(ctx, os.Args[2], os.Args[3], os.Stdin); err != nil {
			fmt.Fprintln(os.Stderr, "bench: pair reference:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// bench is one run: the server, its clients and the figures.
type bench struct {
	o     options
	out   io.Writer
	srv   *server
	api   *api
	bound *bound
	// beside, while P1 and P2 run against the traced server, is the
	// untraced server's client: each repetition of P1 applies the same
	// plan there too, and P2's loop takes turns with a loop there; P1T and
	// P2T divide by those (tracing). besidePID is that server's process.
	beside    *api
	besidePID int
	rdb       *redis.Client
	rows      []row
	warm      envKey

	// What a scenario needs to start a keenauthd of its own (P5), and
	// the URL of the bound's pool (P2's pair reference has one like it).
	bin, dbURL, redisURL, tmp, boundURL string
	// plog, with -pg-log, is told of the pair reference's connections
	// before the reference stops, so that its statements count as the
	// bench's.
	plog *pgLog
	// dbName is the run's database (P2's CPU by process tells its
	// PostgreSQL backends by it).
	dbName string

	// What the profiles of missed scenarios work on again.
	p2Envs []envKey
	p3Env  envKey
	p3Plan string
	p5Env  envKey
	p5N    int
	p6Big  envKey
	p7Key  envKey
	p11Env envKey

	review8, review9, review10 reviewWork
}

// tracedID names the traced runs of P1 and P2 among the scenarios.
const tracedID = "P1, P2 traced"

// report is what -out holds.
type report struct {
	Date      time.Time `json:"date"`
	Command   string    `json:"command"`
	Quick     bool      `json:"quick"`
	Cores     int       `json:"cores"`
	GoVersion string    `json:"go_version"`
	Postgres  string    `json:"postgres_version"`
	Redis     string    `json:"redis_version"`
	LoadStart string    `json:"load_average_start"`
	LoadEnd   string    `json:"load_average_end"`
	// PageFaultUS is pageFaultCost in microseconds, measured at the start.
	PageFaultUS float64       `json:"page_fault_us"`
	Duration    float64       `json:"duration_seconds"`
	Rows        []row         `json:"results"`
	PGLog       []pgLogReport `json:"pg_log,omitempty"`
	Errors      []string      `json:"errors,omitempty"`
}

func run(ctx context.Context, args []string, stdout io.Writer) (err error) {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	began := time.Now()
	rep := report{Date: began.UTC().Truncate(time.Second), Command: "go run ./test/bench " + strings.Join(args, " "),
		Quick: o.quick, Cores: runtime.NumCPU(), GoVersion: runtime.Version(), LoadStart: loadAverage()}
	if pf, err := pageFaultCost(); err == nil {
		rep.PageFaultUS = float64(pf.Nanoseconds()) / 1000
	} else {
		rep.Errors = append(rep.Errors, "page fault cost: "+err.Error())
	}

	root, err := moduleRoot(ctx)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "keenauth-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintln(stdout, "building ./cmd/keenauthd …")
	bin, err := buildServer(ctx, root, tmp)
	if err != nil {
		return err
	}

	// PostgreSQL: a database of the run's own.
	admin, err := pgx.Connect(ctx, o.pgAdmin)
	if err != nil {
		return fmt.Errorf("PostgreSQL at %s: %w (make services starts it)", o.pgAdmin, err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	if err := admin.QueryRow(ctx, "SHOW server_version").Scan(&rep.Postgres); err != nil {
		return err
	}
	suffix := make([]byte, 5)
	_, _ = rand.Read(suffix)
	dbName := "keenauth_bench_" + hex.EncodeToString(suffix)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+dbName); err != nil {
		return fmt.Errorf("create database %s: %w", dbName, err)
	}
	defer func() {
		if o.keep {
			fmt.Fprintf(stdout, "kept database %s\n", dbName)
			return
		}
		if _, derr := admin.Exec(context.WithoutCancel(ctx), "DROP DATABASE IF EXISTS "+dbName+" WITH (FORCE)"); derr != nil {
			err = errors.Join(err, fmt.Errorf("drop database %s: %w", dbName, derr))
		}
	}()
	dbURL := strings.Replace(o.pgAdmin, "/postgres?", "/"+dbName+"?", 1)
	if dbURL == o.pgAdmin {
		return errors.New("-pg must name the database postgres and carry a query (…/postgres?sslmode=disable)")
	}

	var plog *pgLog
	if o.pgLog {
		if plog, err = startPGLog(ctx, admin, dbName, o.pgLogFile, o.pgLogTop); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, plog.reset(context.WithoutCancel(ctx))) }()
		fmt.Fprintf(stdout, "-pg-log: every statement of %s is logged to %s for this run\n", dbName, plog.path)
	}

	// Redis: a database number of the run's own, flushed at start and end.
	rdb := redis.NewClient(&redis.Options{Addr: o.redisAddr, DB: o.redisDB, PoolSize: 4})
	defer rdb.Close()
	if err := rdb.FlushDB(ctx).Err(); err != nil {
		return fmt.Errorf("connect to Redis at %s: %w (make services starts it)", o.redisAddr, err)
	}
	defer rdb.FlushDB(context.WithoutCancel(ctx))
	rep.Redis = redisVersion(ctx, rdb)

	fmt.Fprintf(stdout, "cores %d, %s, PostgreSQL %s, Redis %s, load average %s, a page's first write %.2f µs\n", rep.Cores, rep.GoVersion, rep.Postgres, rep.Redis, rep.LoadStart, rep.PageFaultUS)
	srv, err := startServer(ctx, bin, dbURL, fmt.Sprintf("redis://%s/%d", o.redisAddr, o.redisDB), tmp+"/keenauthd.log", o.serverEnv...)
	if err != nil {
		return err
	}
	defer srv.stop()
	// The bound's statements are planned as keenauthd's are.
	boundURL, err := configdb.GenericPlans(dbURL + "&pool_max_conns=20&application_name=" + benchApplicationName)
	if err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, boundURL)
	if err != nil {
		return err
	}
	defer pool.Close()

	b := &bench{o: o, out: stdout, srv: srv, api: newAPI(srv.base, 32), bound: &bound{pool: pool}, rdb: rdb,
		bin: bin, dbURL: dbURL, boundURL: boundURL, plog: plog, dbName: dbName, redisURL: fmt.Sprintf("redis://%s/%d", o.redisAddr, o.redisDB), tmp: tmp}
	if err := b.warmUp(ctx); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	scenarios := []struct {
		id  string
		run func(context.Context) error
	}{{"P1", b.p1}, {"P2", b.p2}, {tracedID, func(ctx context.Context) error {
		// P1 and P2 traced, right after them: later, after P5's and P6's
		// writes, the service's PostgreSQL work per P2 pair had grown by
		// 40 % (P2's CPU by process), and the traced rows measured that.
		return b.tracing(ctx, append([]row(nil), b.rows...), bin, dbURL, fmt.Sprintf("redis://%s/%d", o.redisAddr, o.redisDB), tmp+"/keenauthd-traced.log")
	}}, {"P3", b.p3}, {"P5", b.p5}, {"P6", b.p6}, {"P7", b.p7}, {"P8", b.review}, {"P11", b.p11}, {"P12", b.p12}, {"P13", b.p13}, {"P14", b.p14}}
	for _, sc := range scenarios {
		if sc.id == tracedID {
			if !o.tracing || len(o.only) > 0 && !o.only["P1"] && !o.only["P2"] {
				continue
			}
		} else if len(o.only) > 0 && !o.only[sc.id] && !(sc.id == "P1" && o.only["P4"]) && !(sc.id == "P8" && (o.only["P9"] || o.only["P10"])) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(stdout, "%s …\n", sc.id)
		t0 := time.Now()
		n := len(b.rows)
		if plog != nil {
			if err := plog.mark(ctx); err != nil {
				rep.Errors = append(rep.Errors, fmt.Sprintf("-pg-log: %v", err))
			}
		}
		if err := sc.run(ctx); err != nil {
			msg := fmt.Sprintf("%s: %v", sc.id, err)
			fmt.Fprintln(stdout, "  error:", msg)
			rep.Errors = append(rep.Errors, msg)
			continue
		}
		fmt.Fprintf(stdout, "  %s done in %.1fs\n", sc.id, time.Since(t0).Seconds())
		if plog != nil {
			if pr, err := plog.report(ctx, stdout, sc.id); err != nil {
				rep.Errors = append(rep.Errors, err.Error())
			} else {
				rep.PGLog = append(rep.PGLog, pr)
			}
		}
		if o.profileDir != "" && sc.id != tracedID {
			for _, r := range b.rows[n:] {
				if r.Checked && !r.Pass {
					if err := b.profile(ctx, r.ID); err != nil {
						rep.Errors = append(rep.Errors, fmt.Sprintf("profile %s: %v", r.ID, err))
					}
				}
			}
		}
	}
	rep.Rows, rep.LoadEnd, rep.Duration = b.rows, loadAverage(), time.Since(began).Seconds()
	printTable(stdout, rep)
	if o.out != "" {
		data, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(o.out, append(data, '\n'), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s\n", o.out)
	}
	if len(rep.Errors) > 0 {
		return fmt.Errorf("%d scenario(s) failed: %s", len(rep.Errors), strings.Join(rep.Errors, "; "))
	}
	return nil
}

// warmUp runs one plan and apply through the server and one bound
// transaction, so that no first figure pays for cold connections or caches.
func (b *bench) warmUp(ctx context.Context) error {
	envs, err := b.srv.newEnvs(ctx, "warm", 2)
	if err != nil {
		return err
	}
	b.warm = envs[0]
	if _, err := b.api.planAndApply(ctx, envs[0], apisDocument(keyedSpecs("w", 10, 0))); err != nil {
		return err
	}
	p, _, err := b.api.plan(ctx, envs[1], apisDocument(keyedSpecs("w", 10, 0)))
	if err != nil {
		return err
	}
	_, err = b.bound.applyCreates(ctx, envs[1], p.ID, sortedSpecs(keyedSpecs("w", 10, 0)))
	return err
}

func redisVersion(ctx context.Context, rdb *redis.Client) string {
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return "unknown"
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// row is one line of the table: a figure, the lower bound measured in the
// same run, their ratio and the target.
type row struct {
	ID       string         `json:"id"`
	Scenario string         `json:"scenario"`
	Figure   float64        `json:"figure"`
	Unit     string         `json:"unit"`
	Bound    float64        `json:"bound"`
	BoundOf  string         `json:"bound_of"`
	Ratio    float64        `json:"ratio"`
	Target   string         `json:"target"`
	Checked  bool           `json:"checked"` // a target applies to this row
	Pass     bool           `json:"pass"`
	Details  map[string]any `json:"details,omitempty"`
}

func (b *bench) add(r row) {
	b.rows = append(b.rows, r)
	status := ""
	if r.Checked && !r.Pass {
		status = "  MISS"
	}
	fmt.Fprintf(b.out, "  %s %s: %.3g %s (bound %.3g %s, ratio %.2f)%s\n", r.ID, r.Scenario, r.Figure, r.Unit, r.Bound, r.Unit, r.Ratio, status)
}

func printTable(w io.Writer, rep report) {
	fmt.Fprintf(w, "\n%s  cores %d  %s  PostgreSQL %s  Redis %s  load %s → %s  page fault %.2f µs  %.0fs",
		rep.Date.Format(time.RFC3339), rep.Cores, rep.GoVersion, rep.Postgres, rep.Redis, rep.LoadStart, rep.LoadEnd, rep.PageFaultUS, rep.Duration)
	if rep.Quick {
		fmt.Fprint(w, "  (-quick: smoke run, figures not comparable)")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "id\tscenario\tfigure\tlower bound\tratio\ttarget\t")
	for _, r := range rep.Rows {
		status := ""
		if r.Checked && !r.Pass {
			status = "MISS"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%s\t%s\n", r.ID, r.Scenario, num(r.Figure, r.Unit), num(r.Bound, r.Unit)+" "+r.BoundOf, r.Ratio, r.Target, status)
	}
	tw.Flush()
}

func num(v float64, unit string) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f %s", v, unit)
	case v >= 10:
		return fmt.Sprintf("%.1f %s", v, unit)
	default:
		return fmt.Sprintf("%.3g %s", v, unit)
	}
}
