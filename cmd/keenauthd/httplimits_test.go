package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keenauth/configplans/service"
)

func TestConfigReadsTheHTTPTimeoutsAndTheBodyBudget(t *testing.T) {
	t.Parallel()
	cfg, err := loadConfig(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	want := service.HTTPLimits{ReadHeaderTimeout: 10 * time.Second, BodyReadTimeout: 10 * time.Second, BodyMinRate: 128 << 10,
		WriteTimeout: 5 * time.Minute, IdleTimeout: 120 * time.Second}
	if got := httpLimits(cfg); got != want {
		t.Fatalf("default limits = %+v, want %+v", got, want)
	}
	if got := httpLimits(cfg).WithDefaults(); got != want {
		t.Fatalf("the defaults of keenauthd (%+v) are not the service's (%+v)", want, got)
	}
	if cfg.BodyBudgetMiB != 64 || cfg.BodyBudgetWait != time.Second {
		t.Fatalf("default body budget = %d MiB, wait %s", cfg.BodyBudgetMiB, cfg.BodyBudgetWait)
	}

	env := map[string]string{
		"KEENAUTHD_READ_HEADER_TIMEOUT": "3s", "KEENAUTHD_BODY_READ_TIMEOUT": "4s", "KEENAUTHD_BODY_MIN_RATE_KIB": "16",
		"KEENAUTHD_WRITE_TIMEOUT": "10m", "KEENAUTHD_IDLE_TIMEOUT": "75s", "KEENAUTHD_BODY_BUDGET_MIB": "256",
		"KEENAUTHD_BODY_BUDGET_WAIT": "250ms",
	}
	cfg, err = loadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	want = service.HTTPLimits{ReadHeaderTimeout: 3 * time.Second, BodyReadTimeout: 4 * time.Second, BodyMinRate: 16 << 10,
		WriteTimeout: 10 * time.Minute, IdleTimeout: 75 * time.Second}
	if got := httpLimits(cfg); got != want {
		t.Fatalf("limits = %+v, want %+v", got, want)
	}
	if cfg.BodyBudgetMiB != 256 || cfg.BodyBudgetWait != 250*time.Millisecond {
		t.Fatalf("body budget = %d MiB, wait %s", cfg.BodyBudgetMiB, cfg.BodyBudgetWait)
	}

	for name := range env {
		bad := map[string]string{name: "0"}
		_, err := loadConfig(func(k string) string { return bad[k] })
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=0: error %v, want one naming the variable", name, err)
		}
	}
}

// TestDevBoundsBodiesByItsVariables runs keenauthd dev with a short body
// deadline and a budget of one large body: of two stalled 1 MiB uploads,
// one holds the budget until it is cut off (408), the other is refused
// (503), and the server goes on serving.
func TestDevBoundsBodiesByItsVariables(t *testing.T) {
	t.Parallel()
	env := map[string]string{"KEENAUTHD_SHUTDOWN_TIMEOUT": "5s", "KEENAUTHD_BODY_READ_TIMEOUT": "3s",
		"KEENAUTHD_BODY_MIN_RATE_KIB": "1048576", "KEENAUTHD_BODY_BUDGET_MIB": "1", "KEENAUTHD_BODY_BUDGET_WAIT": "100ms"}
	d := startDevWith(t, env, "--data", t.TempDir())

	// stalled sends the head of a 1 MiB plan upload and none of its body,
	// and returns the status and code of its answer.
	stalled := func() (int, string, string) {
		nc, err := net.Dial("tcp", d.addr)
		if err != nil {
			return 0, "", err.Error()
		}
		defer nc.Close()
		fmt.Fprintf(nc, "POST /v1/config-plans HTTP/1.1\r\nHost: keenauthd\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", d.secret, 1<<20)
		_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
		if err != nil {
			return 0, "", err.Error()
		}
		defer resp.Body.Close()
		var p struct {
			Code   string `json:"code"`
			Detail string `json:"detail"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&p)
		return resp.StatusCode, p.Code, p.Detail
	}
	type answer struct {
		status       int
		code, detail string
	}
	answers := make(chan answer, 2)
	for range 2 {
		go func() {
			s, c, d := stalled()
			answers <- answer{s, c, d}
		}()
	}
	var got []string
	for range 2 {
		a := <-answers
		got = append(got, fmt.Sprintf("%d %s", a.status, a.code))
		// The detail names the floor: the handler has the configured limits.
		if a.code == "request_timeout" && !strings.Contains(a.detail, "1073741824 bytes a second") {
			t.Errorf("408 detail %q does not name KEENAUTHD_BODY_MIN_RATE_KIB's floor", a.detail)
		}
	}
	slices.Sort(got)
	if want := []string{"408 request_timeout", "503 service_unavailable"}; !slices.Equal(got, want) {
		t.Fatalf("answers to two stalled uploads = %v, want %v", got, want)
	}

	req, _ := http.NewRequest("GET", "http://"+d.addr+"/v1/config-plans", nil)
	req.Header.Set("Authorization", "Bearer "+d.secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a request after the cut-off: %d", resp.StatusCode)
	}
}
