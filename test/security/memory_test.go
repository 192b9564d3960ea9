package security_test

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

var measure = flag.Bool("measure", false, "run TestMeasureUnfinishedHeaderLines: the memory of keenauthd under unfinished 1 MB header lines")

// TestMeasureUnfinishedHeaderLines is a measurement, not a check: 200
// keyless connections each send an unfinished header line of 1 MB, and the
// test prints keenauthd's resident memory before, at its peak and after
// (VmRSS, VmHWM). Run it with
//
//	go test -count=1 -run TestMeasureUnfinishedHeaderLines -v ./test/security/ -measure
func TestMeasureUnfinishedHeaderLines(t *testing.T) {
	if !*measure {
		t.Skip("a measurement: pass -measure")
	}
	s := start(t)
	before := memory(t, s.node.PID())
	line := "GET /v1/config HTTP/1.1\r\nHost: keenauth\r\nX-Long: " + strings.Repeat("b", 1<<20)
	var wg sync.WaitGroup
	answered := make(chan string, 200)
	for range 200 {
		x := s.open()
		wg.Go(func() {
			go x.send(line)
			_ = x.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			buf := make([]byte, 64)
			n, _ := x.conn.Read(buf)
			answered <- string(buf[:n])
		})
	}
	wg.Wait()
	close(answered)
	n431 := 0
	for a := range answered {
		if strings.HasPrefix(a, "HTTP/1.1 431 ") {
			n431++
		}
	}
	time.Sleep(2 * time.Second)
	after := memory(t, s.node.PID())
	t.Logf("200 unfinished 1 MB header lines: %d answered 431; VmRSS before %s, after %s; VmHWM (peak) %s",
		n431, before["VmRSS"], after["VmRSS"], after["VmHWM"])
}

// memory reads the VmRSS and VmHWM lines of /proc/<pid>/status.
func memory(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && (k == "VmRSS" || k == "VmHWM") {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}
