package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// tracingTarget is the target of the tracing overhead (SPEC §21): a traced
// figure at most 1.15 times the same figure untraced, at 100 % sampling.
const tracingTarget = 1.15

// otlpSink is a local OTLP/HTTP trace receiver: it decodes each export
// (as a collector would) and counts the spans.
type otlpSink struct {
	srv *httptest.Server

	mu             sync.Mutex
	exports, spans int
	bytes          int64
	bad            int
}

func newOTLPSink() *otlpSink {
	s := &otlpSink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		err := proto.Unmarshal(body, &req)
		n := 0
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				n += len(ss.Spans)
			}
		}
		s.mu.Lock()
		s.exports, s.spans, s.bytes = s.exports+1, s.spans+n, s.bytes+int64(len(body))
		if err != nil {
			s.bad++
		}
		s.mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	return s
}

func (s *otlpSink) counts() (exports, spans, bad int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exports, s.spans, s.bad, s.bytes
}

// tracing runs P1 and P2 once more against a second keenauthd serve that
// exports every span (OTEL_TRACES_SAMPLER=always_on) to a local OTLP/HTTP
// receiver, and adds a row per figure: the traced figure against the same
// row of the untraced run (untraced), as a ratio where more than 1 is the
// cost of tracing (a duration traced/untraced, a rate untraced/traced).
func (b *bench) tracing(ctx context.Context, untraced []row, bin, dbURL, redisURL, logPath string) error {
	sink := newOTLPSink()
	defer sink.srv.Close()
	traced, err := startServer(ctx, bin, dbURL, redisURL, logPath, append([]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + sink.srv.URL, "OTEL_TRACES_SAMPLER=always_on", "OTEL_SERVICE_NAME=keenauthd-bench"}, b.o.serverEnv...)...)
	if err != nil {
		return err
	}
	plain, plainAPI, rows, p2Envs := b.srv, b.api, b.rows, b.p2Envs
	b.srv, b.api, b.rows = traced, newAPI(traced.base, 32), nil
	var runErr error
	for _, sc := range []struct {
		id  string
		run func(context.Context) error
	}{{"P1", b.p1}, {"P2", b.p2}} {
		if len(b.o.only) > 0 && !b.o.only[sc.id] || runErr != nil {
			continue
		}
		fmt.Fprintf(b.out, "  %s traced …\n", sc.id)
		b.beside, b.besidePID = plainAPI, plain.pid()
		runErr = sc.run(ctx)
		b.beside = nil
	}
	tracedRows := b.rows
	b.srv, b.api, b.rows, b.p2Envs = plain, plainAPI, rows, p2Envs
	traced.stop() // drains: the last spans are exported
	if runErr != nil {
		return runErr
	}
	exports, spans, bad, size := sink.counts()
	if spans == 0 || bad > 0 {
		return fmt.Errorf("the receiver got %d spans in %d exports (%d malformed): tracing was not on", spans, exports, bad)
	}
	for _, t := range tracedRows {
		if t.ID != "P1" && t.ID != "P2" {
			continue
		}
		var u *row
		for i := range untraced {
			if untraced[i].ID == t.ID && untraced[i].Scenario == t.Scenario {
				u = &untraced[i]
			}
		}
		if u == nil {
			continue
		}
		r := tracedRow(t, *u)
		r.Details["receiver_exports"], r.Details["receiver_spans"], r.Details["receiver_bytes"] = exports, spans, size
		b.add(r)
	}
	return nil
}

// tracedRow is the row of P1T or P2T for t, a row of the traced run, and u,
// the same row of the untraced run: the traced figure over the untraced
// one (a rate: the untraced over the traced), so that more than 1 is the
// cost of tracing.
func tracedRow(t, u row) row {
	untracedFig, boundOf := u.Figure, "(untraced)"
	// P1's traced applies alternated with applies of the same plans
	// on the untraced server (b.beside): those are its bound, not the
	// untraced run's, which ran before P2 filled the database. P2's
	// traced loop took turns with a loop on the untraced server, its
	// bound in that run.
	if m, ok := t.Details["untraced_apply_median_ms"].(float64); ok && m > 0 {
		untracedFig, boundOf = m, "(untraced, alternated)"
	} else if t.ID == "P2" && t.BoundOf == "(untraced, alternated)" && t.Bound > 0 {
		untracedFig, boundOf = t.Bound, t.BoundOf
	}
	ratio := t.Figure / untracedFig
	if t.Unit == "/s" {
		ratio = untracedFig / t.Figure
	}
	r := row{ID: t.ID + "T", Scenario: t.Scenario + ", traced (100 % sampled, OTLP/HTTP)", Figure: t.Figure, Unit: t.Unit,
		Bound: untracedFig, BoundOf: boundOf, Ratio: ratio, Target: "—",
		Details: map[string]any{"traced": t.Details, "untraced_row": u.Scenario, "untraced_row_figure": u.Figure}}
	// Each run has its own lower bound, measured beside it; the ratio
	// of the two rows' ratios to their bounds is in the details. It is
	// not the row's ratio: the bound's own spread (P2's bare SQL loop
	// read 628 and 736 pairs/s a minute apart) weighs on it as much as
	// the drift it would take out, now that the traced runs follow the
	// untraced ones at once.
	if t.Bound > 0 && u.Bound > 0 && t.BoundOf == u.BoundOf {
		tr, ur := t.Figure/t.Bound, u.Figure/u.Bound
		r.Details["traced_ratio_to_bound"], r.Details["untraced_ratio_to_bound"] = tr, ur
		if t.Unit == "/s" {
			r.Details["ratio_of_bound_ratios"] = ur / tr
		} else {
			r.Details["ratio_of_bound_ratios"] = tr / ur
		}
	}
	// The checked figures: the apply of 1,000 changes and P2's throughput.
	if (t.ID == "P1" && t.Details["changes"] == 1000) || (t.ID == "P2" && t.Unit == "/s") {
		r.Target, r.Checked, r.Pass = fmt.Sprintf("ratio ≤ %.2f", tracingTarget), true, ratio <= tracingTarget
	}
	return r
}
