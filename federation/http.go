package federation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults of HTTPConfig.
const (
	DefaultTimeout = 5 * time.Second
	DefaultRetries = 2
	DefaultBackoff = 100 * time.Millisecond
)

// maxResponseBytes bounds what is read of an answer: the service's answers
// are a few hundred bytes.
const maxResponseBytes = 1 << 20

// HTTPConfig configures an HTTPClient. Zero values mean the defaults.
type HTTPConfig struct {
	// BaseURL is the service's root URL, without /v1
	// (KEENAUTHD_FEDERATION_URL).
	BaseURL string
	// Token is sent as a bearer token (KEENAUTHD_FEDERATION_TOKEN).
	Token string
	// Timeout bounds each attempt, answer included
	// (KEENAUTHD_FEDERATION_TIMEOUT); default 5s.
	Timeout time.Duration
	// Retries is how many times a PUT is tried again after an
	// ErrUnavailable-class failure; default 2, negative for none.
	Retries int
	// Backoff is the wait before the first retry, doubled before each next
	// one; default 100ms.
	Backoff time.Duration
	// HTTPClient sends the requests; default a client over
	// http.DefaultTransport. Redirects are never followed, whatever its
	// CheckRedirect says: a redirected PUT would carry the client secret to
	// another address.
	HTTPClient *http.Client
}

// HTTPClient is the Client of the real federation service. It is safe for
// concurrent use.
//
// Only PutOIDC retries: the PUT is idempotent, and it is the write an apply
// waits on. GetOIDC and TestOIDC make one attempt; their callers answer 503
// and the user (or the CLI) retries. A test in particular reaches the
// identity provider and is not ours to repeat.
type HTTPClient struct {
	base    string
	token   string
	timeout time.Duration
	retries int
	backoff time.Duration
	hc      *http.Client
}

// NewHTTPClient returns a client configured by cfg.
func NewHTTPClient(cfg HTTPConfig) *HTTPClient {
	c := &HTTPClient{
		base:    strings.TrimRight(cfg.BaseURL, "/"),
		token:   cfg.Token,
		timeout: cfg.Timeout,
		retries: cfg.Retries,
		backoff: cfg.Backoff,
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	switch {
	case c.retries == 0:
		c.retries = DefaultRetries
	case c.retries < 0:
		c.retries = 0
	}
	if c.backoff <= 0 {
		c.backoff = DefaultBackoff
	}
	hc := http.Client{}
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.hc = &hc
	return c
}

// putBody is the body of the PUT; it is the only place the secret goes.
type putBody struct {
	Material
	ClientSecret string `json:"client_secret"`
}

// PutOIDC writes the material and its secret, retrying on unavailability
// with a doubling backoff, at most cfg.Retries times, and never past ctx.
func (c *HTTPClient) PutOIDC(ctx context.Context, env, connectionID string, m Material, clientSecret string) error {
	if err := checkIDs(env, connectionID); err != nil {
		return err
	}
	if m.Scopes == nil {
		m.Scopes = []string{}
	}
	body, err := json.Marshal(putBody{Material: m, ClientSecret: clientSecret})
	if err != nil {
		// Never wrap err: it could quote the body.
		return errors.New("federation: cannot encode the OIDC material")
	}
	path := oidcPath(env, connectionID)
	forms := secretForms(clientSecret)
	delay := c.backoff
	for attempt := 1; ; attempt++ {
		status, data, err := c.do(ctx, http.MethodPut, path, body, forms)
		if err == nil {
			err = statusError(http.MethodPut, path, status, data, forms)
		}
		if err == nil {
			return nil
		}
		if !errors.Is(err, ErrUnavailable) || attempt > c.retries {
			return afterAttempts(err, attempt)
		}
		if cerr := ctx.Err(); cerr != nil {
			// Ended between the answer and the wait: as in the wait, the
			// error says both why the write failed and why it stopped.
			return fmt.Errorf("%w (after %d attempts, then %w)", err, attempt, cerr)
		}
		if werr := wait(ctx, delay); werr != nil {
			if errors.Is(werr, errNoTimeLeft) {
				return afterAttempts(err, attempt)
			}
			return fmt.Errorf("%w (after %d attempts, then %w)", err, attempt, werr)
		}
		delay *= 2
	}
}

// GetOIDC reads the stored material, in one attempt.
func (c *HTTPClient) GetOIDC(ctx context.Context, env, connectionID string) (Stored, error) {
	if err := checkIDs(env, connectionID); err != nil {
		return Stored{}, err
	}
	path := oidcPath(env, connectionID)
	status, data, err := c.do(ctx, http.MethodGet, path, nil, nil)
	if err == nil {
		err = statusError(http.MethodGet, path, status, data, nil)
	}
	if err != nil {
		return Stored{}, err
	}
	var s Stored
	if status != http.StatusOK || json.Unmarshal(data, &s) != nil {
		return Stored{}, unparseable(http.MethodGet, path, status)
	}
	return s, nil
}

// TestOIDC asks the service to test the stored material, in one attempt.
func (c *HTTPClient) TestOIDC(ctx context.Context, env, connectionID string) (bool, *string, error) {
	if err := checkIDs(env, connectionID); err != nil {
		return false, nil, err
	}
	path := oidcPath(env, connectionID) + ":test"
	status, data, err := c.do(ctx, http.MethodPost, path, nil, nil)
	if err == nil {
		err = statusError(http.MethodPost, path, status, data, nil)
	}
	if err != nil {
		return false, nil, err
	}
	var answer struct {
		OK     *bool   `json:"ok"`
		Reason *string `json:"reason"`
	}
	if status != http.StatusOK || json.Unmarshal(data, &answer) != nil || answer.OK == nil {
		return false, nil, unparseable(http.MethodPost, path, status)
	}
	return *answer.OK, answer.Reason, nil
}

func oidcPath(env, connectionID string) string {
	return "/v1/environments/" + url.PathEscape(env) + "/connections/" + url.PathEscape(connectionID) + "/oidc"
}

// do makes one attempt under its own timeout and returns the status and
// the (bounded) body of the answer. Its errors are transport errors only.
func (c *HTTPClient) do(ctx context.Context, method, path string, body []byte, forms []string) (int, []byte, error) {
	actx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(actx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, fmt.Errorf("federation %s %s: cannot build the request: check the base URL", method, path)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, c.transportError(ctx, actx, method, path, err, forms)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return 0, nil, c.transportError(ctx, actx, method, path, err, forms)
	}
	return resp.StatusCode, data, nil
}

// transportError describes a failed attempt. The caller's own cancellation
// is not the service's fault: it is returned as such, not as
// ErrUnavailable. The caller's deadline passing is a service that did not
// answer in the time there was, so it is both.
func (c *HTTPClient) transportError(ctx, actx context.Context, method, path string, err error, forms []string) error {
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return fmt.Errorf("federation %s %s: %w", method, path, ctx.Err())
	case ctx.Err() != nil:
		return fmt.Errorf("%w: %s %s: %w", ErrUnavailable, method, path, ctx.Err())
	case actx.Err() != nil:
		return fmt.Errorf("%w: %s %s: no answer within %s", ErrUnavailable, method, path, c.timeout)
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		// url.Error repeats the URL; the path is already in the message.
		err = uerr.Err
	}
	return fmt.Errorf("%w: %s %s: %s", ErrUnavailable, method, path, redact(err.Error(), forms))
}

// statusError maps a status to the package's errors; nil for 2xx. Only a
// 422 body is read, for its errors[]; other bodies never reach an error.
func statusError(method, path string, status int, data []byte, forms []string) error {
	switch {
	case status >= 200 && status < 300:
		return nil
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fmt.Errorf("%w: %s %s: status %d", ErrUnauthorized, method, path, status)
	case status == http.StatusNotFound:
		return fmt.Errorf("%w: %s %s: status %d", ErrNotFound, method, path, status)
	case status == http.StatusUnprocessableEntity && method == http.MethodPut:
		return rejected(data, forms)
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500:
		return fmt.Errorf("%w: %s %s: status %d", ErrUnavailable, method, path, status)
	default:
		return fmt.Errorf("federation %s %s: unexpected status %d", method, path, status)
	}
}

func unparseable(method, path string, status int) error {
	return fmt.Errorf("%w: %s %s: unparseable answer (status %d)", ErrUnavailable, method, path, status)
}

// rejected reads the errors[] of a 422. A 422 is final even when its body
// cannot be read: the material is then reported as a whole. Repeated
// problems (after sanitizing) are dropped, and past MaxRejectedErrors
// distinct ones the rest are left out and the error says so.
func rejected(data []byte, forms []string) *RejectedError {
	var body struct {
		Errors []FieldError `json:"errors"`
	}
	_ = json.Unmarshal(data, &body)
	e := &RejectedError{}
	m := newSecretMatcher(forms)
	seen := make(map[FieldError]bool)
	for _, fe := range body.Errors {
		fe = sanitizeFieldError(fe, m)
		if seen[fe] {
			continue
		}
		if len(e.Errors) == MaxRejectedErrors {
			e.Truncated = true
			break
		}
		seen[fe] = true
		e.Errors = append(e.Errors, fe)
	}
	if len(e.Errors) == 0 {
		e.Errors = []FieldError{{Pointer: "", Code: CodeInvalid}}
	}
	return e
}

func afterAttempts(err error, attempts int) error {
	if attempts == 1 {
		return err
	}
	return fmt.Errorf("%w (after %d attempts)", err, attempts)
}

// errNoTimeLeft: the caller's deadline comes before the next attempt could
// start, so waiting for it is pointless.
var errNoTimeLeft = errors.New("no time left for another attempt")

func wait(ctx context.Context, d time.Duration) error {
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= d {
		return errNoTimeLeft
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
