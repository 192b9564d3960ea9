package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/jackc/pgx/v5"
)

// pgLog is -pg-log: PostgreSQL's own time per statement for the bench's
// database. It sets log_min_duration_statement = 0 (and
// log_parameter_max_length = 0, so that no parameter value — a secret's
// hash, a spec — is written to the server's log) with ALTER DATABASE on the
// bench's database only, reads the server's log through pg_read_file from
// where it ended when a scenario began, and groups the durations by
// statement. reset undoes both settings; run defers it, so it runs on
// failure and after Ctrl-C too.
type pgLog struct {
	admin  *pgx.Conn
	db     string
	path   string // the server's log file, as the server sees it
	offset int64  // where the log ended when the current scenario began
	top    int
	warn   string       // set when the log's lines do not name their database
	bench  map[int]bool // the backends of the bench's own pool (the bounds, the seeding)
}

// benchApplicationName marks the bench's own connections, whose statements
// the report sets apart from the server's.
const benchApplicationName = "keenauth-bench"

// noteBenchBackends adds the backends of the bench's pool that are open now.
func (l *pgLog) noteBenchBackends(ctx context.Context) error {
	rows, err := l.admin.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = $2", l.db, benchApplicationName)
	if err != nil {
		return err
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	for _, p := range pids {
		l.bench[int(p)] = true
	}
	return err
}

// pgLogFile finds the server's log: pg_current_logfile() with the logging
// collector, else Debian's pg_ctlcluster file for the server's major
// version (log_destination stderr, redirected by pg_ctlcluster), unless
// -pg-log-file names it.
func pgLogFile(ctx context.Context, admin *pgx.Conn, given string) (string, error) {
	if given != "" {
		return given, nil
	}
	var current *string
	if err := admin.QueryRow(ctx, "SELECT pg_current_logfile()").Scan(&current); err != nil {
		return "", err
	}
	if current != nil && *current != "" {
		if strings.HasPrefix(*current, "/") {
			return *current, nil
		}
		var dataDir string
		if err := admin.QueryRow(ctx, "SHOW data_directory").Scan(&dataDir); err != nil {
			return "", err
		}
		return dataDir + "/" + *current, nil
	}
	var major int
	if err := admin.QueryRow(ctx, "SELECT current_setting('server_version_num')::int / 10000").Scan(&major); err != nil {
		return "", err
	}
	return fmt.Sprintf("/var/log/postgresql/postgresql-%d-main.log", major), nil
}

// startPGLog turns the statement log on for db (before any connection to
// it is opened: a database's settings apply to new sessions).
func startPGLog(ctx context.Context, admin *pgx.Conn, db, file string, top int) (*pgLog, error) {
	path, err := pgLogFile(ctx, admin, file)
	if err != nil {
		return nil, fmt.Errorf("-pg-log: finding the server's log: %w", err)
	}
	l := &pgLog{admin: admin, db: db, path: path, top: top, bench: map[int]bool{}}
	if _, err := l.size(ctx); err != nil {
		return nil, fmt.Errorf("-pg-log: the server cannot read its log %s (-pg-log-file names another): %w", path, err)
	}
	var prefix string
	if err := admin.QueryRow(ctx, "SHOW log_line_prefix").Scan(&prefix); err != nil {
		return nil, err
	}
	if !strings.Contains(prefix, "%d") {
		l.warn = "log_line_prefix has no %d: the statements of every database are counted"
	}
	for _, set := range []string{"log_min_duration_statement = 0", "log_parameter_max_length = 0"} {
		if _, err := admin.Exec(ctx, "ALTER DATABASE "+db+" SET "+set); err != nil {
			return nil, fmt.Errorf("-pg-log: ALTER DATABASE %s SET %s: %w", db, set, err)
		}
	}
	return l, nil
}

// reset takes the settings off the bench's database.
func (l *pgLog) reset(ctx context.Context) error {
	var errs []string
	for _, name := range []string{"log_min_duration_statement", "log_parameter_max_length"} {
		if _, err := l.admin.Exec(ctx, "ALTER DATABASE "+l.db+" RESET "+name); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("-pg-log: reset: %s", strings.Join(errs, "; "))
	}
	return nil
}

func (l *pgLog) size(ctx context.Context) (int64, error) {
	var n int64
	err := l.admin.QueryRow(ctx, "SELECT size FROM pg_stat_file($1)", l.path).Scan(&n)
	return n, err
}

// mark notes where the log ends: the next report starts there.
func (l *pgLog) mark(ctx context.Context) error {
	n, err := l.size(ctx)
	l.offset = n
	return errors.Join(err, l.noteBenchBackends(ctx))
}

// read returns what the server logged since mark, 8 MiB at a time.
func (l *pgLog) read(ctx context.Context) (string, error) {
	end, err := l.size(ctx)
	if err != nil {
		return "", err
	}
	if end < l.offset { // rotated
		l.offset = 0
	}
	var sb strings.Builder
	for off := l.offset; off < end; {
		n := min(end-off, 8<<20)
		var chunk []byte
		if err := l.admin.QueryRow(ctx, "SELECT pg_read_binary_file($1, $2, $3)", l.path, off, n).Scan(&chunk); err != nil {
			return "", err
		}
		if len(chunk) == 0 {
			break
		}
		sb.Write(chunk)
		off += int64(len(chunk))
	}
	l.offset = end
	return sb.String(), nil
}

// pgStatement is one statement's time on the server in one scenario:
// every parse, bind and execute (or simple-protocol statement) of the same
// text, its literals taken out.
type pgStatement struct {
	Source    string  `json:"source"` // server (keenauthd and its commands) or bench (the bounds, the seeding)
	Phase     string  `json:"phase"`  // statement, parse, bind or execute
	Statement string  `json:"statement"`
	Count     int     `json:"count"`
	TotalMS   float64 `json:"total_ms"`
	MeanMS    float64 `json:"mean_ms"`
}

var (
	pgDurationLine = regexp.MustCompile(`LOG:\s+duration: ([0-9.]+) ms\s+(statement|parse|bind|execute)(?: [^:]*)?: (.*)$`)
	pgLineStart    = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`)
	pgPID          = regexp.MustCompile(`\[(\d+)\]`)
	pgLiteral      = regexp.MustCompile(`'(?:[^']|'')*'|\b\d+(?:\.\d+)?\b|\$\d+`)
	pgList         = regexp.MustCompile(`\?(?:\s*,\s*\?)+`)
	pgSpace        = regexp.MustCompile(`\s+`)
)

// normalizeStatement folds a statement's text so that its executions
// group: literals and parameters become ?, lists of them one ?, spaces one.
func normalizeStatement(s string) string {
	s = pgSpace.ReplaceAllString(strings.TrimSpace(s), " ")
	s = pgLiteral.ReplaceAllString(s, "?")
	return pgList.ReplaceAllString(s, "?, …")
}

// parsePGLog groups the duration lines of db (every database when db is
// empty) by source, phase and statement, the largest total first; a line
// whose process id (%p) is in bench is the bench's own. A statement's text
// goes on in the lines that do not start with a timestamp.
func parsePGLog(r io.Reader, db string, bench map[int]bool) []pgStatement {
	groups := map[[3]string]*pgStatement{}
	var cur *struct {
		source, phase, text string
		ms                  float64
	}
	flush := func() {
		if cur == nil {
			return
		}
		k := [3]string{cur.source, cur.phase, normalizeStatement(cur.text)}
		g := groups[k]
		if g == nil {
			g = &pgStatement{Source: k[0], Phase: k[1], Statement: k[2]}
			groups[k] = g
		}
		g.Count++
		g.TotalMS += cur.ms
		cur = nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		if !pgLineStart.MatchString(line) {
			if cur != nil {
				cur.text += " " + line
			}
			continue
		}
		flush()
		if db != "" && !strings.Contains(line, "@"+db+" ") && !strings.Contains(line, " "+db+" ") {
			continue
		}
		m := pgDurationLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		d, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			continue
		}
		source := "server"
		if p := pgPID.FindStringSubmatch(line); p != nil {
			if pid, err := strconv.Atoi(p[1]); err == nil && bench[pid] {
				source = "bench"
			}
		}
		cur = &struct {
			source, phase, text string
			ms                  float64
		}{source, m[2], m[3], d}
	}
	flush()
	out := make([]pgStatement, 0, len(groups))
	for _, g := range groups {
		g.MeanMS = g.TotalMS / float64(g.Count)
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b pgStatement) int {
		if a.TotalMS != b.TotalMS {
			if a.TotalMS > b.TotalMS {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Source+a.Phase+a.Statement, b.Source+b.Phase+b.Statement)
	})
	return out
}

// pgLogReport is one scenario's statements in bench.json.
type pgLogReport struct {
	Scenario   string        `json:"scenario"`
	TotalMS    float64       `json:"total_ms"` // keenauthd's statements
	Count      int           `json:"count"`
	BenchMS    float64       `json:"bench_ms"`   // the bench's own (bounds, seeding)
	Statements []pgStatement `json:"statements"` // the top N by total
}

// report reads what the scenario logged and prints its top statements.
func (l *pgLog) report(ctx context.Context, w io.Writer, scenario string) (pgLogReport, error) {
	text, err := l.read(ctx)
	if err != nil {
		return pgLogReport{}, fmt.Errorf("-pg-log: reading %s: %w", l.path, err)
	}
	db := l.db
	if l.warn != "" {
		db = ""
	}
	if err := l.noteBenchBackends(ctx); err != nil {
		return pgLogReport{}, err
	}
	all := parsePGLog(strings.NewReader(text), db, l.bench)
	rep := pgLogReport{Scenario: scenario}
	for _, s := range all {
		if s.Source == "server" {
			rep.TotalMS += s.TotalMS
			rep.Count += s.Count
		} else {
			rep.BenchMS += s.TotalMS
		}
	}
	rep.Statements = all[:min(len(all), l.top)]
	fmt.Fprintf(w, "  PostgreSQL's time in %s: %.1f ms for keenauthd over %d logged phases, %.1f ms for the bench's own statements", scenario, rep.TotalMS, rep.Count, rep.BenchMS)
	if l.warn != "" {
		fmt.Fprintf(w, " (%s)", l.warn)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "    total ms\tcount\tmean ms\t\t")
	for _, s := range rep.Statements {
		text := s.Statement
		if r := []rune(text); len(r) > 110 {
			text = string(r[:110]) + "…"
		}
		fmt.Fprintf(tw, "    %.1f\t%d\t%.3f\t\t%-6s %-9s %s\n", s.TotalMS, s.Count, s.MeanMS, s.Source, s.Phase, text)
	}
	tw.Flush()
	return rep, nil
}
