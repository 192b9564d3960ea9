package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// attemptTimeout bounds one HTTP attempt; an attempt that runs out is a
// network failure, retried like one.
const attemptTimeout = 2 * time.Minute

// connectTimeout bounds the connection of one attempt (name resolution
// and TCP connect). A retry's connection also ends with --retry-for, so
// that a server that cannot be reached is given up on in time.
const connectTimeout = 10 * time.Second

// client calls the Keenauth API.
type client struct {
	baseURL  *url.URL
	secret   string
	http     *http.Client
	retryFor time.Duration
	// wait sleeps between attempts, announcing each retry on standard
	// error.
	wait func(ctx context.Context, d time.Duration, announce string) error
}

// newHTTPClient is the client of every API call. It never follows a
// redirect: following one would send the API key, and an apply's
// resolved secrets, to wherever the answer points (a 307 or 308 resends
// the body). A 3xx answer is returned as it is and do turns it into a
// *redirectError.
//
// A failure to connect is returned as a *dialError: nothing was sent, so
// any request may be sent again.
func newHTTPClient() *http.Client {
	d := &net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dl, ok := ctx.Value(connectDeadlineKey{}).(time.Time); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, dl)
			defer cancel()
		}
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, &dialError{err: err}
		}
		return conn, nil
	}
	return &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}

// connectDeadlineKey carries, in a request's context, when its connection
// attempt must end.
type connectDeadlineKey struct{}

// dialError is a failure to connect to the API at all (connection refused,
// a name that does not resolve, no route): the request was not sent.
type dialError struct{ err error }

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// unreachable reports a failure to connect at all.
func unreachable(err error) bool {
	var de *dialError
	return errors.As(err, &de)
}

// request is one API call.
type request struct {
	method string
	path   string
	query  url.Values
	body   []byte
	// idempotencyKey, when set, is sent as Idempotency-Key on every attempt;
	// a POST is retried only with one.
	idempotencyKey string
}

// response is an API answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

// replayed reports an Idempotency-Key replay of a finished request.
func (r *response) replayed() bool { return r.header.Get("Idempotent-Replayed") == "true" }

// problem is an RFC 9457 problem details answer of the API.
type problem struct {
	Status    int          `json:"status"`
	Title     string       `json:"title"`
	Code      string       `json:"code"`
	Detail    string       `json:"detail"`
	Errors    []fieldError `json:"errors"`
	RequestID string       `json:"request_id"`

	PlanStatus           string   `json:"plan_status"`
	RequiredPermissions  []string `json:"required_permissions"`
	UnconfirmedDeletions []string `json:"unconfirmed_deletions"`
	RetryAfter           *int     `json:"retry_after"`
	Policy               string   `json:"policy"`
	// ApprovalsRequired and ApprovalsReceived come with approval_required.
	ApprovalsRequired int `json:"approvals_required"`
	ApprovalsReceived int `json:"approvals_received"`
}

type fieldError struct {
	Pointer string `json:"pointer"`
	Code    string `json:"code"`
	Detail  string `json:"detail"`
}

// apiError is an answer of the API that is not a success.
type apiError struct {
	status  int
	body    []byte // the answer as received, printed unchanged with --json
	problem problem
	// attempts and waited say how hard the CLI tried before giving up.
	attempts int
	waited   time.Duration
	// flagOf, when set, writes a problem of the request body as the flag
	// of the command line that produced it (false: none did).
	flagOf func(fieldError) (string, bool)
	// planID is the plan the request acted on, for a hint that names it.
	planID string
}

func (e *apiError) Error() string {
	p := e.problem
	if p.Code == "" {
		return fmt.Sprintf("the API answered HTTP %d", e.status)
	}
	return sentence(p)
}

// sentence is the problem as one readable sentence: its title and detail.
func sentence(p problem) string {
	title, detail := strings.TrimSpace(p.Title), strings.TrimSpace(p.Detail)
	switch {
	case title == "":
		title = p.Code
	case detail == "" || strings.EqualFold(detail, title):
		return title
	}
	if detail == "" {
		return title
	}
	return title + ": " + detail
}

func newAPIError(r *response) *apiError {
	e := &apiError{status: r.status, body: r.body}
	if err := json.Unmarshal(r.body, &e.problem); err != nil || e.problem.Code == "" {
		e.problem = problem{Status: r.status, Title: http.StatusText(r.status),
			Detail: "the answer is not a problem details object"}
	}
	if e.problem.RequestID == "" {
		e.problem.RequestID = r.header.Get("Request-Id")
	}
	return e
}

// networkError is a failure to get any answer from the API.
type networkError struct {
	url      string
	err      error
	attempts int
	waited   time.Duration
}

// unreachable reports that no attempt could even connect.
func (e *networkError) unreachable() bool { return unreachable(e.err) }

func (e *networkError) Error() string {
	return fmt.Sprintf("cannot reach the API at %s: %s", e.url, describeNetworkError(e.err))
}

func (e *networkError) Unwrap() error { return e.err }

// describeNetworkError drops the method and URL that net/http repeats.
func describeNetworkError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer within " + attemptTimeout.String()
	}
	return err.Error()
}

// redirectError is a 3xx answer: the CLI does not follow it, nor retry.
type redirectError struct {
	status int
	// location is the answer's Location resolved against the request URL,
	// its password hidden; "" when the answer had none.
	location string
}

func (e *redirectError) Error() string {
	to := "with no Location"
	if e.location != "" {
		to = "to " + e.location
	}
	return fmt.Sprintf("the API answered HTTP %d %s, a redirect %s; keenauth never follows a redirect "+
		"(nothing was sent there): check KEENAUTH_API_URL or --api-url", e.status, http.StatusText(e.status), to)
}

func newRedirectError(r *response, target string) *redirectError {
	e := &redirectError{status: r.status}
	loc := r.header.Get("Location")
	if loc == "" {
		return e
	}
	base, err := url.Parse(target)
	if err == nil {
		var u *url.URL
		if u, err = base.Parse(loc); err == nil {
			e.location = u.Redacted()
			return e
		}
	}
	// Not a URL (a control character, say): shown quoted, never raw.
	e.location = strconv.Quote(loc)
	return e
}

// schemeError is an API URL whose scheme is not the one the server at its
// address speaks: https:// to a plain-HTTP port (the server answered the
// TLS handshake in HTTP), or http:// to an HTTPS port (it answered 400 in
// plain text). Every attempt would fail the same way, so it is not retried.
type schemeError struct {
	url    *url.URL
	speaks string // the scheme the server speaks
}

func (e *schemeError) Error() string {
	fixed := *e.url
	fixed.Scheme = e.speaks
	name := map[string]string{"http": "plain HTTP", "https": "HTTPS (TLS)"}[e.speaks]
	return fmt.Sprintf("the API URL %s uses %s://, but the server at %s speaks %s: use %s (KEENAUTH_API_URL or --api-url)",
		e.url.Redacted(), e.url.Scheme, e.url.Host, name, fixed.Redacted())
}

// schemeMismatch recognises an attempt that failed because of the URL's
// scheme: Go's client reports a plain-HTTP answer to a TLS handshake as
// http.ErrSchemeMismatch; a TLS server answers a plain request with a 400
// that is not a problem (Go's and nginx's wording).
func schemeMismatch(base *url.URL, resp *response, err error) *schemeError {
	switch {
	case err != nil && errors.Is(err, http.ErrSchemeMismatch):
		return &schemeError{url: base, speaks: "http"}
	case err == nil && resp.status == http.StatusBadRequest && base.Scheme == "http" &&
		!strings.Contains(resp.header.Get("Content-Type"), "json") &&
		(bytes.Contains(resp.body, []byte("HTTP request to an HTTPS server")) ||
			bytes.Contains(resp.body, []byte("plain HTTP request was sent to HTTPS port"))):
		return &schemeError{url: base, speaks: "https"}
	}
	return nil
}

// isRedirect reports a 3xx status.
func isRedirect(status int) bool { return status >= 300 && status < 400 }

// do sends r, retrying what can be retried safely (see retryable) with
// the same Idempotency-Key until --retry-for is spent. It returns the
// last answer, a *networkError when none came, or a *redirectError for a
// 3xx answer, which is never retried.
func (c *client) do(ctx context.Context, r request) (*response, error) {
	u := *c.baseURL
	u.Path = strings.TrimSuffix(u.Path, "/") + r.path
	if len(r.query) > 0 {
		u.RawQuery = r.query.Encode()
	}
	target := u.String()
	start := time.Now()
	deadline := start.Add(c.retryFor)
	for attempt := 1; ; attempt++ {
		actx := ctx
		if attempt > 1 {
			// A retry connects within what is left of --retry-for.
			cd := time.Now().Add(connectTimeout)
			if deadline.Before(cd) {
				cd = deadline
			}
			actx = context.WithValue(ctx, connectDeadlineKey{}, cd)
		}
		resp, err := c.attempt(actx, r, target)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if se := schemeMismatch(c.baseURL, resp, err); se != nil {
			return nil, se // the same URL can only fail again
		}
		if err == nil && isRedirect(resp.status) {
			return nil, newRedirectError(resp, target)
		}
		wait, reason, retry := retryable(r, resp, err, attempt)
		if !retry || time.Now().Add(wait).After(deadline) {
			if err != nil {
				return nil, &networkError{url: c.baseURL.Redacted(), err: err, attempts: attempt, waited: time.Since(start)}
			}
			if resp.status >= 400 {
				e := newAPIError(resp)
				e.attempts, e.waited = attempt, time.Since(start)
				return nil, e
			}
			return resp, nil
		}
		left := time.Until(deadline).Round(time.Second)
		msg := fmt.Sprintf("%s; retrying in %s (attempt %d; --retry-for %s, %s left)", reason, roundWait(wait), attempt+1, c.retryFor, left)
		if err := c.wait(ctx, wait, msg); err != nil {
			return nil, err
		}
	}
}

func (c *client) attempt(ctx context.Context, r request, target string) (*response, error) {
	ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.secret)
	req.Header.Set("Accept", "application/json, application/problem+json")
	req.Header.Set("User-Agent", "keenauth-cli")
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", r.idempotencyKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := readBody(resp)
	if err != nil {
		return nil, err
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// maxPresize bounds the buffer readBody reserves from a Content-Length
// before any byte has come: a larger answer grows past it as it arrives.
const maxPresize = 32 << 20

// readBody reads an answer whole. With a Content-Length it reads into one
// buffer of that size: io.ReadAll's doublings cleared and copied about
// 2 MB more for a 1 MB plan (16% of config show's CPU in a profile).
func readBody(resp *http.Response) ([]byte, error) {
	n := resp.ContentLength
	if n <= 0 || n > maxPresize {
		return io.ReadAll(resp.Body)
	}
	b := make([]byte, 0, n+1) // +1: the read that returns EOF needs room
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // more than announced: grow as io.ReadAll does
		}
		m, err := resp.Body.Read(b[len(b):cap(b)])
		b = b[:len(b)+m]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// getJSON sends a GET and decodes a success into v; it returns the raw
// answer for --json.
func (c *client) getJSON(ctx context.Context, path string, query url.Values, v any) ([]byte, error) {
	resp, err := c.do(ctx, request{method: http.MethodGet, path: path, query: query})
	if err != nil {
		return nil, err
	}
	if err := decode(resp, v); err != nil {
		return nil, err
	}
	return resp.body, nil
}

// decode reads a success answer into v.
func decode(resp *response, v any) error {
	if v == nil {
		return nil
	}
	if err := json.Unmarshal(resp.body, v); err != nil {
		return fmt.Errorf("the API's answer (HTTP %d) is not the expected JSON: %w", resp.status, err)
	}
	return nil
}
