package fakefederation

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/keenauth/configplans/federation"
)

type fault struct {
	method string // "" matches every method
	left   int    // calls left; negative: until cleared
	hang   time.Duration
	status int
	body   string
}

// Faults selects which calls the next fault applies to: start from
// Server.Next or Server.On, then add the fault with one of its methods.
//
// Faults are kept in the order they were added. A call takes the first
// fault that matches its method and has calls left, so faults added one
// after the other answer consecutive calls:
//
//	srv.Next(1).Unavailable()                // the first call: 503
//	srv.Next(1).Reject(fe)                   // the second: 422
//	srv.On(http.MethodPut).Hang(time.Second) // every later PUT, until Clear
//
// A fault without a limit shadows the faults added after it until Clear. A
// call refused for its token takes no fault.
type Faults struct {
	s      *Server
	method string
	n      int
}

// Next scopes a fault to the next n matching calls.
func (s *Server) Next(n int) Faults { return s.all().Next(n) }

// On scopes a fault to calls of one HTTP method (PUT, GET, or POST for
// oidc:test).
func (s *Server) On(method string) Faults { return s.all().On(method) }

// Next limits the fault to the next n matching calls; n must be at least 1.
func (f Faults) Next(n int) Faults {
	if n < 1 {
		panic("fakefederation: Next needs n >= 1")
	}
	f.n = n
	return f
}

// On limits the fault to calls of one HTTP method.
func (f Faults) On(method string) Faults {
	f.method = method
	return f
}

// FailWith answers status with body (as application/json).
func (f Faults) FailWith(status int, body string) {
	f.add(&fault{status: status, body: body})
}

// Reject answers 422 {"errors": [...]}, as the real service does when it
// refuses material.
func (f Faults) Reject(errs ...federation.FieldError) {
	if errs == nil {
		errs = []federation.FieldError{}
	}
	body, _ := json.Marshal(map[string]any{"errors": errs})
	f.add(&fault{status: http.StatusUnprocessableEntity, body: string(body)})
}

// Unavailable answers 503.
func (f Faults) Unavailable() {
	f.FailWith(http.StatusServiceUnavailable, `{"error":"unavailable"}`)
}

// Hang waits d before answering normally. It stops waiting, without an
// answer, when the client gives up or the fake is closed.
func (f Faults) Hang(d time.Duration) {
	f.add(&fault{hang: d})
}

func (f Faults) add(ft *fault) {
	ft.method = f.method
	ft.left = f.n
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	f.s.faults = append(f.s.faults, ft)
}

// FailWith answers every call with status and body, until Clear.
func (s *Server) FailWith(status int, body string) { s.all().FailWith(status, body) }

// Reject answers every call with 422 and errs, until Clear.
func (s *Server) Reject(errs ...federation.FieldError) { s.all().Reject(errs...) }

// Unavailable answers every call with 503, until Clear.
func (s *Server) Unavailable() { s.all().Unavailable() }

// Hang delays every call by d, until Clear.
func (s *Server) Hang(d time.Duration) { s.all().Hang(d) }

// Clear removes every fault. Stored material, test results and recorded
// calls stay.
func (s *Server) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

func (s *Server) all() Faults { return Faults{s: s, n: -1} }

// takeFault returns the fault the call takes, if any, and counts it.
func (s *Server) takeFault(method string) *fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.method != "" && f.method != method {
			continue
		}
		if f.left > 0 {
			f.left--
			if f.left == 0 {
				s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			}
		}
		return f
	}
	return nil
}

// apply plays the fault; it reports whether the call should then be
// answered normally.
func (f *fault) apply(w http.ResponseWriter, r *http.Request, done <-chan struct{}) bool {
	if f.hang > 0 {
		t := time.NewTimer(f.hang)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return false
		case <-done:
			return false
		}
	}
	if f.status == 0 {
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.status)
	_, _ = w.Write([]byte(f.body))
	return false
}
