package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// The CPU of a loop, by process. P2's loop and its bound both keep the
// machine's cores busy, so their throughputs stand in the ratio of the CPU
// each pair costs the whole machine; cpuUse says where that CPU goes, from
// /proc: the server (keenauthd), the PostgreSQL backends of the bench's
// database, PostgreSQL's other processes (its background writers, and the
// backends of other databases on a shared machine), redis-server, the bench
// itself, and the rest of the machine.

// clockTick is the unit of /proc's CPU times (USER_HZ): 100 per second on
// every Linux architecture Go runs on.
const clockTick = 10 * time.Millisecond

// cpuGroups are the groups of cpuUse, in the order they are printed.
var cpuGroups = []string{"keenauthd", "postgres_bench_db", "postgres_other", "redis", "bench", "other"}

// cpuSample is the CPU every group had used at one moment, and the
// machine's busy and total time.
type cpuSample struct {
	at          time.Time
	groups      map[string]time.Duration
	busy, total time.Duration
}

// sampleCPU reads /proc. serverPID is keenauthd's; dbName the bench's
// database, which PostgreSQL's backends show in their process title. The
// CPU of a process that ends between two samples is lost, except for
// PostgreSQL's backends, whose time the postmaster gathers when they end
// (its cutime and cstime, counted in postgres_other); the pools of the
// server and of the bound keep their connections, so little is lost.
func sampleCPU(serverPID int, dbName string) (cpuSample, error) {
	s := cpuSample{at: time.Now(), groups: map[string]time.Duration{}}
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s, err
	}
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) < 5 || fields[0] != "cpu" {
		return s, fmt.Errorf("/proc/stat: %q", line)
	}
	for i, f := range fields[1:] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return s, fmt.Errorf("/proc/stat: %q", line)
		}
		if i >= 7 { // guest times are within user and nice already
			break
		}
		s.total += time.Duration(n) * clockTick
		if i != 3 && i != 4 { // idle, iowait
			s.busy += time.Duration(n) * clockTick
		}
	}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return s, err
	}
	self := os.Getpid()
	var counted time.Duration
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		comm, used, children, ok := processCPU(pid)
		if !ok {
			continue // ended, or not ours to read
		}
		var group string
		switch {
		case pid == serverPID:
			group = "keenauthd"
		case pid == self:
			group = "bench"
		case comm == "redis-server":
			group = "redis"
		case comm == "postgres":
			group = "postgres_other"
			if backendOf(pid, dbName) {
				group = "postgres_bench_db"
			}
			used += children // the postmaster's: its backends that ended
		default:
			continue
		}
		s.groups[group] += used
		counted += used
	}
	s.groups["other"] = s.busy - counted // negative differences cancel out between samples
	return s, nil
}

// backendOf reports whether pid is a PostgreSQL backend connected to
// dbName, from its process title: "postgres: [CLUSTER: ]USER DATABASE
// HOST(PORT) STATE" (Debian names the cluster, "15/main:").
func backendOf(pid int, dbName string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(strings.ReplaceAll(string(cmdline), "\x00", " "))
	if len(f) < 3 || f[0] != "postgres:" {
		return false
	}
	for _, w := range f[1:min(len(f), 5)] {
		if w == dbName {
			return true
		}
	}
	return false
}

// processCPU reads the command name, the CPU time used (user + system) and
// the CPU time of the waited-for children of pid from /proc/<pid>/stat.
func processCPU(pid int) (comm string, used, children time.Duration, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, 0, false
	}
	// "pid (comm) state ppid …": comm may hold spaces and parentheses.
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return "", 0, 0, false
	}
	f := strings.Fields(string(b[end+1:]))
	// After comm: state(3) … utime(14) stime(15) cutime(16) cstime(17).
	if len(f) < 15 {
		return "", 0, 0, false
	}
	var t [4]int64
	for i := range t {
		if t[i], err = strconv.ParseInt(f[11+i], 10, 64); err != nil {
			return "", 0, 0, false
		}
	}
	return string(b[open+1 : end]), time.Duration(t[0]+t[1]) * clockTick, time.Duration(t[2]+t[3]) * clockTick, true
}

// cpuUse is the CPU between two samples, per group and in all, per
// operation (n of them), and how busy the machine was.
type cpuUse struct {
	PerOp    map[string]float64 `json:"cpu_ms_per_op"`
	Total    float64            `json:"cpu_ms_per_op_total"`
	BusyFrac float64            `json:"machine_busy_fraction"`
}

// since is what each group, and the machine, used from a to s.
func (s cpuSample) since(a cpuSample) cpuSample {
	d := cpuSample{at: s.at, groups: map[string]time.Duration{}, busy: s.busy - a.busy, total: s.total - a.total}
	for _, g := range cpuGroups {
		d.groups[g] = s.groups[g] - a.groups[g]
	}
	return d
}

// plus adds up two spans of use (each what since answers): the CPU of a
// loop that ran in turns.
func (s cpuSample) plus(d cpuSample) cpuSample {
	sum := cpuSample{at: d.at, groups: map[string]time.Duration{}, busy: s.busy + d.busy, total: s.total + d.total}
	for _, g := range cpuGroups {
		sum.groups[g] = s.groups[g] + d.groups[g]
	}
	return sum
}

// use is a span of use (what since answers) per operation, n of them.
func (s cpuSample) use(n int) cpuUse {
	u := cpuUse{PerOp: map[string]float64{}}
	if n == 0 {
		return u
	}
	per := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(n) }
	for _, g := range cpuGroups {
		u.PerOp[g] = per(s.groups[g])
	}
	u.Total = per(s.busy)
	if s.total > 0 {
		u.BusyFrac = float64(s.busy) / float64(s.total)
	}
	return u
}

// String is the use as one line: the total, then each group.
func (u cpuUse) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%.2f ms (", u.Total)
	for i, g := range cpuGroups {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "%s %.2f", g, u.PerOp[g])
	}
	fmt.Fprintf(&sb, "); machine %.0f %% busy", 100*u.BusyFrac)
	return sb.String()
}
