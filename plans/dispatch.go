package plans

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// The dispatcher's defaults (§19).
const (
	// DeliveryTimeout bounds one attempt: connection, request and answer.
	DeliveryTimeout = 10 * time.Second
	// DeliveryLease is how long a claim holds a delivery: a replica that
	// died holding one is taken over once it passes.
	DeliveryLease = 60 * time.Second
	// DispatchPoll is how often a dispatcher looks for due deliveries when
	// it found none: a new delivery is attempted within it of its commit.
	DispatchPoll = 500 * time.Millisecond
	// dispatchBatch is how many deliveries one claim takes, and
	// dispatchWorkers how many are posted at once.
	dispatchBatch   = 16
	dispatchWorkers = 4
	// maxAnswerRead bounds what is read of a receiver's answer (it is
	// discarded; reading lets the connection be reused).
	maxAnswerRead = 64 << 10
	// maxLastError bounds a delivery's last_error, in bytes.
	maxLastError = 500
)

// Version is keenauthd's version, for the User-Agent of deliveries: set
// with -ldflags "-X github.com/keenauth/configplans/plans.Version=…", else
// the module's version, else "dev".
var Version string

// userAgent is keenauthd/<version>.
func userAgent() string {
	v := Version
	if v == "" {
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
	}
	if v == "" {
		v = "dev"
	}
	return "keenauthd/" + v
}

// Dispatcher posts the deliveries of the outbox. Every replica runs one:
// each claim takes due deliveries that no live claim holds (FOR UPDATE SKIP
// LOCKED on PostgreSQL; SQLite has one writer), under a lease that a
// replica which dies lets pass, so another takes the delivery over.
// Delivery is at least once: a replica killed after a receiver answered
// and before the answer was recorded posts it again (same webhook-id).
type Dispatcher struct {
	db     *configdb.DB
	cfg    WebhookConfig
	log    *slog.Logger
	client *http.Client
	now    func() time.Time
	// Poll and Lease are DispatchPoll and DeliveryLease unless a test
	// shortens them.
	Poll  time.Duration
	Lease time.Duration
}

// Dispatcher returns the dispatcher of this replica.
func (w *Webhooks) Dispatcher() *Dispatcher {
	d := &Dispatcher{db: w.db, cfg: w.cfg.Webhooks, log: w.log, now: w.now, Poll: DispatchPoll, Lease: DeliveryLease}
	if len(d.cfg.RetrySchedule) == 0 {
		d.cfg.RetrySchedule = DefaultRetrySchedule()
	}
	dialer := &net.Dialer{Timeout: DeliveryTimeout}
	if !d.cfg.AllowPrivate {
		// The address checked is the one dialed, after resolution: a name
		// that resolves to a private address is refused however it does.
		dialer.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &refusedAddress{address: address, reason: "an unparsable"}
			}
			if reason := RefusedAddress(ap.Addr()); reason != "" {
				return &refusedAddress{address: ap.Addr().String(), reason: reason}
			}
			return nil
		}
	}
	d.client = &http.Client{
		Timeout: DeliveryTimeout,
		// Redirects are never followed: a 3xx is a failed attempt.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{Proxy: nil, DialContext: dialer.DialContext, ForceAttemptHTTP2: true,
			TLSHandshakeTimeout: DeliveryTimeout, ResponseHeaderTimeout: DeliveryTimeout, MaxIdleConnsPerHost: 2, IdleConnTimeout: 90 * time.Second},
	}
	return d
}

// refusedAddress is a dial refused because of the address it would reach.
type refusedAddress struct{ address, reason string }

func (e *refusedAddress) Error() string {
	return fmt.Sprintf("the url's host resolves to %s address (%s), which webhooks may not reach", e.reason, e.address)
}

// Run dispatches until ctx ends: a claim as soon as the last one was full,
// else every Poll.
func (d *Dispatcher) Run(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := d.RunOnce(ctx)
		if err != nil && ctx.Err() == nil {
			d.log.WarnContext(ctx, "webhook dispatch failed; it runs again", "error", err)
		}
		if n == dispatchBatch && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(d.Poll):
		}
	}
}

// RunOnce claims a batch of due deliveries and attempts each; it returns
// how many it claimed.
func (d *Dispatcher) RunOnce(ctx context.Context) (int, error) {
	claim := config.RandomBase32(26)
	var rows []configdb.WebhookDeliveryRow
	err := d.db.Write(ctx, func(tx *configdb.Tx) error {
		var err error
		rows, err = tx.ClaimDeliveries(ctx, claim, d.Lease, dispatchBatch)
		return err
	})
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	byEnv := map[string][]configdb.WebhookDeliveryRow{}
	for _, r := range rows {
		byEnv[r.EnvironmentID] = append(byEnv[r.EnvironmentID], r)
	}
	var jobs []delivery
	for env, rs := range byEnv {
		js, err := d.prepare(ctx, env, rs)
		if err != nil {
			// The claims lapse with their lease and are taken again.
			return len(rows), fmt.Errorf("prepare the deliveries of %s: %w", env, err)
		}
		jobs = append(jobs, js...)
	}
	sem := make(chan struct{}, dispatchWorkers)
	var wg sync.WaitGroup
	for _, j := range jobs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			d.deliver(ctx, claim, j)
		}()
	}
	wg.Wait()
	return len(rows), nil
}

// delivery is one claimed delivery, with its endpoint and body.
type delivery struct {
	row      configdb.WebhookDeliveryRow
	endpoint configdb.WebhookEndpointRow
	body     []byte // nil: the event is gone
}

// prepare reads the endpoints of the deliveries of one environment and
// builds the body of each that has none yet (BuildMessages, a bounded
// number of reads for the batch).
func (d *Dispatcher) prepare(ctx context.Context, envID string, rows []configdb.WebhookDeliveryRow) ([]delivery, error) {
	var endpointIDs, eventIDs []string
	for _, r := range rows {
		endpointIDs = append(endpointIDs, r.EndpointID)
		if r.Body == nil {
			eventIDs = append(eventIDs, r.EventID)
		}
	}
	endpoints, err := d.db.EndpointsByID(ctx, envID, sortedUnique(endpointIDs))
	if err != nil {
		return nil, err
	}
	bodies := map[string][]byte{}
	if len(eventIDs) > 0 {
		evs, err := d.db.EventsByID(ctx, envID, sortedUnique(eventIDs))
		if err != nil {
			return nil, err
		}
		msgs, err := BuildMessages(ctx, d.db.Reader, envID, evs)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			bodies[m.ID] = config.MustJSON(m)
		}
	}
	out := make([]delivery, 0, len(rows))
	for _, r := range rows {
		j := delivery{row: r, endpoint: endpoints[r.EndpointID]}
		if r.Body != nil {
			j.body = []byte(*r.Body)
		} else {
			j.body = bodies[r.EventID]
		}
		out = append(out, j)
	}
	return out, nil
}

// deliver makes one attempt and records it.
func (d *Dispatcher) deliver(ctx context.Context, claim string, j delivery) {
	now := d.now()
	var a configdb.Attempt
	if j.body == nil {
		msg := "the event no longer exists"
		a = configdb.Attempt{Status: configdb.DeliveryFailed, Error: &msg}
	} else {
		a = d.post(ctx, j, now)
		a.Body = string(j.body)
	}
	err := d.db.Write(context.WithoutCancel(ctx), func(tx *configdb.Tx) error {
		if a.Status == configdb.DeliveryPending {
			next := tx.Now.Add(d.cfg.RetrySchedule[j.row.Attempts])
			a.Next = &next
		}
		recorded, err := tx.RecordAttempt(ctx, j.row.EnvironmentID, j.row.ID, claim, a)
		if err == nil && !recorded {
			d.log.InfoContext(ctx, "a webhook delivery's claim was taken over before its attempt was recorded", "delivery_id", j.row.ID)
		}
		return err
	})
	if err != nil {
		d.log.WarnContext(ctx, "recording a webhook attempt failed; the delivery's lease will release it", "delivery_id", j.row.ID, "error", err)
	}
}

// post sends the delivery once, signed, and says what came of it: failed
// after the last retry of the schedule, pending (to retry) before it.
func (d *Dispatcher) post(ctx context.Context, j delivery, now time.Time) configdb.Attempt {
	fail := func(code *int, msg string) configdb.Attempt {
		if len(msg) > maxLastError {
			msg = msg[:maxLastError]
		}
		st := configdb.DeliveryPending
		if j.row.Attempts >= len(d.cfg.RetrySchedule) {
			st = configdb.DeliveryFailed
		}
		return configdb.Attempt{Status: st, StatusCode: code, Error: &msg}
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, DeliveryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.endpoint.URL, bytes.NewReader(j.body))
	if err != nil {
		return fail(nil, "the url cannot be posted to: "+err.Error())
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent())
	req.Header.Set("webhook-id", j.row.ID)
	req.Header.Set("webhook-timestamp", ts)
	req.Header.Set("webhook-signature", Signatures(j.endpoint, j.row.ID, ts, j.body, now))
	resp, err := d.client.Do(req)
	if err != nil {
		var refused *refusedAddress
		if errors.As(err, &refused) {
			return fail(nil, refused.Error())
		}
		if parent.Err() != nil {
			return fail(nil, "keenauthd stopped during the attempt")
		}
		if ctx.Err() != nil {
			return fail(nil, "no answer within 10 s")
		}
		return fail(nil, strings.TrimPrefix(err.Error(), "Post "))
	}
	_, _ = io.CopyN(io.Discard, resp.Body, maxAnswerRead)
	_ = resp.Body.Close()
	code := resp.StatusCode
	if code >= 200 && code < 300 {
		return configdb.Attempt{Status: configdb.DeliverySucceeded, StatusCode: &code}
	}
	return fail(&code, fmt.Sprintf("the endpoint answered %d %s", code, http.StatusText(code)))
}

// Signatures is the webhook-signature header of a delivery (Standard
// Webhooks): v1,<base64 HMAC-SHA256 of "id.timestamp.body"> keyed with the
// endpoint's secret, and with its previous secret, space-separated, while
// that one still signs.
func Signatures(e configdb.WebhookEndpointRow, id, ts string, body []byte, now time.Time) string {
	sigs := []string{sign(e.Secret, id, ts, body)}
	if e.PreviousSecret != nil && e.PreviousSecretUntil != nil && now.Before(*e.PreviousSecretUntil) {
		sigs = append(sigs, sign(*e.PreviousSecret, id, ts, body))
	}
	return strings.Join(sigs, " ")
}

func sign(secret, id, ts string, body []byte) string {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
	if err != nil {
		key = []byte(secret) // never: secrets are made by newSecret
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}
