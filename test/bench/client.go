package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// api is an HTTP client of the server that keeps its connections alive
// (enough idle connections per host for every concurrent client), so that
// the figures measure the server rather than TCP handshakes.
type api struct {
	base string
	hc   *http.Client
	// bodies are the buffers answers are read into, kept from request to
	// request (a channel, not a sync.Pool, which a collection empties), so
	// that the last byte of an answer is read into memory the bench has
	// written before: io.ReadAll grew a new buffer for every answer, and
	// on the slower machine kind, where a page's first write costs 11–14
	// µs, that growth was the bench's own time inside the latency, twice
	// as much for a revision diff as for the export it is measured
	// against. The answer is copied out after its time is taken.
	bodies chan *bytes.Buffer
}

func newAPI(base string, conns int) *api {
	tr := &http.Transport{
		MaxIdleConns:        conns * 2,
		MaxIdleConnsPerHost: conns * 2,
		MaxConnsPerHost:     0,
		IdleConnTimeout:     5 * time.Minute,
		DisableCompression:  true,
	}
	return &api{base: base, hc: &http.Client{Transport: tr, Timeout: 5 * time.Minute}, bodies: make(chan *bytes.Buffer, conns)}
}

// body is a buffer to read an answer into: one read into before, or a new
// one.
func (a *api) body() *bytes.Buffer {
	select {
	case b := <-a.bodies:
		b.Reset()
		return b
	default:
		return new(bytes.Buffer)
	}
}

// keep gives b back for the next answer (dropped when conns are kept).
func (a *api) keep(b *bytes.Buffer) {
	select {
	case a.bodies <- b:
	default:
	}
}

// reply is an answer and how long it took, from sending the request to
// reading the last byte of the body.
type reply struct {
	status int
	header http.Header
	body   []byte
	took   time.Duration
}

func (a *api) do(ctx context.Context, method, path, secret string, body []byte, header map[string]string) (reply, error) {
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, bytes.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := a.hc.Do(req)
	if err != nil {
		return reply{}, err
	}
	buf := a.body()
	defer a.keep(buf)
	_, err = buf.ReadFrom(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if err != nil {
		return reply{}, err
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: bytes.Clone(buf.Bytes()), took: took}, nil
}

// planned is the part of a plan the benchmark reads.
type planned struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Summary struct {
		Create, Update, Delete int
		NoOp                   int `json:"no_op"`
	} `json:"summary"`
	RevisionID *string `json:"revision_id"`
}

// plan creates a plan from a plan-creation body; anything but 201 is an error.
func (a *api) plan(ctx context.Context, ek envKey, body []byte) (planned, reply, error) {
	r, err := a.do(ctx, http.MethodPost, "/v1/config-plans", ek.Secret, body, nil)
	if err != nil {
		return planned{}, r, err
	}
	if r.status != http.StatusCreated {
		return planned{}, r, fmt.Errorf("plan creation: %d %s", r.status, clip(r.body))
	}
	var p planned
	if err := json.Unmarshal(r.body, &p); err != nil {
		return planned{}, r, err
	}
	return p, r, nil
}

// apply applies a plan with an empty body (and an Idempotency-Key when
// key is not empty); anything but 200 is an error.
func (a *api) apply(ctx context.Context, ek envKey, planID, key string) (reply, error) {
	var h map[string]string
	if key != "" {
		h = map[string]string{"Idempotency-Key": key}
	}
	r, err := a.do(ctx, http.MethodPost, "/v1/config-plans/"+planID+":apply", ek.Secret, []byte("{}"), h)
	if err != nil {
		return r, err
	}
	if r.status != http.StatusOK {
		return r, fmt.Errorf("apply %s: %d %s", planID, r.status, clip(r.body))
	}
	return r, nil
}

// planAndApply creates a plan from body and applies it.
func (a *api) planAndApply(ctx context.Context, ek envKey, body []byte) (planned, error) {
	p, _, err := a.planApplied(ctx, ek, body)
	return p, err
}

// appliedIn plans body in ek, applies the plan and answers the apply's
// time.
func (a *api) appliedIn(ctx context.Context, ek envKey, body []byte) (time.Duration, error) {
	_, r, err := a.planApplied(ctx, ek, body)
	return r.took, err
}

// planApplied creates a plan from body, applies it and answers the plan
// and the apply's reply.
func (a *api) planApplied(ctx context.Context, ek envKey, body []byte) (planned, reply, error) {
	p, _, err := a.plan(ctx, ek, body)
	if err != nil {
		return p, reply{}, err
	}
	r, err := a.apply(ctx, ek, p.ID, "")
	return p, r, err
}

func clip(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}
