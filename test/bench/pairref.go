package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The pair reference is the least a plan and its apply can do over HTTP on
// this machine: a bare net/http server in a process of its own that
// writes, for a plan request, the rows of the bound's plan (bound.writePlan)
// and, for the apply of that plan, the rows of the bound's apply
// (bound.writeApply), with the bound's batches on a pgx pool of its own.
// It reads the plan's document and answers with a few bytes of JSON; it
// keeps what the bound's client keeps (each environment's resource, in
// memory) and reads nothing else: no router, authentication (a secret is
// looked up in a map), rate limit, plan computation, version check, log
// line or event. P2's bound is the same writes without HTTP; the reference
// says how much of P2's pair is HTTP, two requests and their answers,
// which no change to the service's own work can remove.

// pairRefArg, as the first argument, makes the benchmark's own binary
// serve the pair reference: its address and its database's URL follow,
// and the environments' keys come as JSON on its standard input.
const pairRefArg = "-serve-pair-reference"

// pairRef is the reference's state.
type pairRef struct {
	bd    *bound
	keys  map[string]envKey   // by secret
	envs  map[string]*pairEnv // by environment id; set at the start
	mu    sync.Mutex          // guards plans
	plans map[string]refPlan  // planned, not applied yet, by plan id
}

// pairEnv is what the reference keeps of an environment: its resource as
// it last wrote it, loaded at the first plan after a reset.
type pairEnv struct {
	mu     sync.Mutex
	st     pairState
	loaded bool
}

// refPlan is a plan the reference wrote: for which environment, and the
// spec its apply writes.
type refPlan struct {
	ek   envKey
	next []byte
}

// servePairReference runs the pair reference on addr over the database
// dbURL, for the keys read from keys, until it is killed.
func servePairReference(ctx context.Context, addr, dbURL string, keys io.Reader) error {
	var eks []envKey
	if err := json.NewDecoder(keys).Decode(&eks); err != nil {
		return fmt.Errorf("the environments' keys: %w", err)
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	ref := newPairRef(&bound{pool: pool}, eks)
	srv := &http.Server{Addr: addr, Handler: ref, ReadHeaderTimeout: 10 * time.Second}
	return srv.ListenAndServe()
}

func newPairRef(bd *bound, eks []envKey) *pairRef {
	ref := &pairRef{bd: bd, keys: map[string]envKey{}, envs: map[string]*pairEnv{}, plans: map[string]refPlan{}}
	for _, ek := range eks {
		ref.keys[ek.Secret] = ek
		ref.envs[ek.EnvID] = &pairEnv{}
	}
	return ref
}

// ServeHTTP answers POST /v1/config-plans (a document of one api, the one
// P2 changes), POST /v1/config-plans/{id}:apply, and POST /reset, which
// forgets every environment's resource: another loop changed it since.
func (ref *pairRef) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ek, known := ref.keys[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	switch {
	case r.Method != http.MethodPost:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	case r.URL.Path == "/reset":
		ref.reset()
		w.WriteHeader(http.StatusNoContent)
	case !known:
		http.Error(w, "unknown key", http.StatusUnauthorized)
	case r.URL.Path == "/v1/config-plans":
		ref.plan(w, r, ek)
	case strings.HasPrefix(r.URL.Path, "/v1/config-plans/") && strings.HasSuffix(r.URL.Path, ":apply"):
		ref.apply(w, r, strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v1/config-plans/"), ":apply"))
	default:
		http.Error(w, "not found", http.StatusNotFound)
	}
}

// reset takes each environment's lock, then the plans' (never both at
// once): a plan request holds its environment's while it takes the plans'.
func (ref *pairRef) reset() {
	for _, e := range ref.envs {
		e.mu.Lock()
		e.loaded = false
		e.mu.Unlock()
	}
	ref.mu.Lock()
	clear(ref.plans)
	ref.mu.Unlock()
}

func (ref *pairRef) plan(w http.ResponseWriter, r *http.Request, ek envKey) {
	var doc struct {
		Config struct {
			APIs map[string]json.RawMessage `json:"apis"`
		} `json:"config"`
	}
	if err := json.NewDecoder(r.Body).Decode(&doc); err != nil || len(doc.Config.APIs) != 1 {
		http.Error(w, "a document of one api", http.StatusBadRequest)
		return
	}
	e := ref.envs[ek.EnvID]
	e.mu.Lock()
	defer e.mu.Unlock()
	for key, spec := range doc.Config.APIs {
		if !e.loaded {
			st, err := ref.bd.resourceState(r.Context(), ek.EnvID, key)
			if err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			e.st, e.loaded = st, true
		}
		if key != e.st.key {
			http.Error(w, "not the api of the environment", http.StatusBadRequest)
			return
		}
		id, err := ref.bd.writePlan(r.Context(), ek, e.st, spec)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		ref.mu.Lock()
		ref.plans[id] = refPlan{ek: ek, next: spec}
		ref.mu.Unlock()
		answer(w, http.StatusCreated, fmt.Sprintf(`{"id":%q,"status":"planned","summary":{"create":0,"update":1,"delete":0,"no_op":0}}`, id))
	}
}

func (ref *pairRef) apply(w http.ResponseWriter, r *http.Request, id string) {
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ref.mu.Lock()
	p, ok := ref.plans[id]
	delete(ref.plans, id)
	ref.mu.Unlock()
	if !ok {
		http.Error(w, "no such plan", http.StatusNotFound)
		return
	}
	e := ref.envs[p.ek.EnvID]
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := ref.bd.writeApply(r.Context(), p.ek, &e.st, id, p.next); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	answer(w, http.StatusOK, fmt.Sprintf(`{"id":%q,"status":"applied"}`, id))
}

func answer(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// startPairReference starts the reference for the environments eks, over
// the database dbURL.
func startPairReference(ctx context.Context, dbURL string, eks []envKey) (*reference, error) {
	keys, err := json.Marshal(eks)
	if err != nil {
		return nil, err
	}
	return startReference(ctx, keys, pairRefArg, dbURL)
}

// resetPairReference makes the reference read each environment's resource
// again at its next plan.
func resetPairReference(ctx context.Context, a *api) error {
	r, err := a.do(ctx, http.MethodPost, "/reset", "", nil, nil)
	if err == nil && r.status != http.StatusNoContent {
		err = fmt.Errorf("reset of the pair reference: %d %s", r.status, clip(r.body))
	}
	return err
}
