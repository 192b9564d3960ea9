package plans

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// Webhook prefixes and limits (§19).
const (
	// PrefixWebhookEndpoint and PrefixWebhookMessage are the ids of an
	// endpoint and of a delivery (its webhook-id).
	PrefixWebhookEndpoint = "whe_"
	PrefixWebhookMessage  = "msg_"
	// MaxWebhookEndpoints bounds the endpoints of an environment.
	MaxWebhookEndpoints = 20
	// MaxWebhookURL bounds an endpoint's URL, in bytes; MaxWebhookDescription
	// its description, in characters.
	MaxWebhookURL         = 2048
	MaxWebhookDescription = 1000
	// RotatedSecretGrace is how long a rotated secret keeps signing.
	RotatedSecretGrace = 24 * time.Hour
	secretPrefix       = "whsec_"
	endpointEnabled    = "enabled"
	endpointDisabled   = "disabled"
)

// WebhookConfig are the settings of webhooks (§19): the variables
// KEENAUTHD_WEBHOOK_ALLOW_HTTP, KEENAUTHD_WEBHOOK_ALLOW_PRIVATE and
// KEENAUTHD_WEBHOOK_RETRY_SCHEDULE.
type WebhookConfig struct {
	AllowHTTP    bool
	AllowPrivate bool
	// RetrySchedule are the waits before each retry of a delivery that
	// failed; after the last the delivery is failed.
	RetrySchedule []time.Duration
}

// DefaultRetrySchedule is §19's: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h.
func DefaultRetrySchedule() []time.Duration {
	return []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}
}

// ParseRetrySchedule reads KEENAUTHD_WEBHOOK_RETRY_SCHEDULE: comma-separated
// Go durations, each positive.
func ParseRetrySchedule(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, part := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%q is not a positive Go duration", strings.TrimSpace(part))
		}
		out = append(out, d)
	}
	return out, nil
}

// Webhooks are the webhook endpoints of an environment and their
// deliveries (§19).
type Webhooks struct{ core }

// WebhookEndpoint is an endpoint as the API shows it. Secret is set only in
// the answers that create it or rotate it.
type WebhookEndpoint struct {
	ID          string   `json:"id"`
	Object      string   `json:"object"`
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description *string  `json:"description"`
	Status      string   `json:"status"`
	Secret      string   `json:"secret,omitempty"`
	CreatedAt   Time     `json:"created_at"`
}

// EndpointInput is the body of an endpoint's creation (every field) or of
// its PATCH (the fields set). Description is nil for null or absent;
// DescriptionSet says whether it was given.
type EndpointInput struct {
	URL            *string
	Events         []string
	EventsSet      bool
	Description    *string
	DescriptionSet bool
	Status         *string
}

func endpointOf(r *configdb.WebhookEndpointRow) (WebhookEndpoint, error) {
	e := WebhookEndpoint{ID: r.ID, Object: "webhook_endpoint", URL: r.URL, Description: r.Description, Status: r.Status, CreatedAt: Time(r.CreatedAt)}
	if err := json.Unmarshal(r.Events, &e.Events); err != nil {
		return e, fmt.Errorf("webhook endpoint %s: decode events: %w", r.ID, err)
	}
	return e, nil
}

// newSecret is whsec_ and the base64 of 32 random bytes.
func newSecret() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return secretPrefix + base64.StdEncoding.EncodeToString(b)
}

// checkEndpoint answers every problem of in at once (422
// validation_failed); create asks for url and events.
func (w *Webhooks) checkEndpoint(in EndpointInput, create bool) error {
	var errs []config.FieldError
	add := func(pointer string, code config.Code, detail string) {
		errs = append(errs, config.FieldError{Pointer: pointer, Code: code, Detail: detail})
	}
	switch {
	case in.URL != nil:
		if problem := w.checkURL(*in.URL); problem != "" {
			add("/url", config.CodeInvalid, problem)
		}
	case create:
		add("/url", config.CodeRequired, "an endpoint needs a url")
	}
	switch {
	case in.EventsSet:
		if len(in.Events) == 0 {
			add("/events", config.CodeInvalid, `events lists event types, or is ["*"] for every type`)
		}
		for i, ev := range in.Events {
			switch {
			case ev == "*" && len(in.Events) > 1:
				add(fmt.Sprintf("/events/%d", i), config.CodeInvalid, `"*" stands alone: it is every event type`)
			case ev != "*" && !slices.Contains(WebhookTypes(), ev):
				add(fmt.Sprintf("/events/%d", i), config.CodeInvalid, "not an event type; the types are "+strings.Join(WebhookTypes(), ", "))
			case slices.Index(in.Events, ev) < i:
				add(fmt.Sprintf("/events/%d", i), config.CodeDuplicate, "the type is listed twice")
			}
		}
	case create:
		add("/events", config.CodeRequired, `an endpoint needs events: event types, or ["*"]`)
	}
	if d := in.Description; d != nil {
		if utf8.RuneCountInString(*d) > MaxWebhookDescription {
			add("/description", config.CodeTooLong, "a description has at most 1,000 characters")
		} else if strings.ContainsFunc(*d, unicode.IsControl) {
			add("/description", config.CodeInvalid, "a description holds no control character")
		}
	}
	if s := in.Status; s != nil && *s != endpointEnabled && *s != endpointDisabled {
		add("/status", config.CodeInvalid, "status is enabled or disabled")
	}
	if len(errs) > 0 {
		return config.Problems(config.CodeValidationFailed, errs)
	}
	return nil
}

// checkURL is the problem of an endpoint's URL, "" for none: https (http
// when allowed), a host, no credentials, and no IP literal of a loopback,
// private, link-local, unspecified or multicast address unless allowed. A
// name is checked at each delivery, on the address dialed.
func (w *Webhooks) checkURL(raw string) string {
	if len(raw) > MaxWebhookURL {
		return "the url is over 2,048 bytes"
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return "not an absolute URL with a host"
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && w.cfg.Webhooks.AllowHTTP:
	default:
		return "the url must use https://"
	}
	if u.User != nil {
		return "the url holds no credentials: deliveries are signed"
	}
	if addr, err := netip.ParseAddr(u.Hostname()); err == nil && !w.cfg.Webhooks.AllowPrivate {
		if reason := RefusedAddress(addr); reason != "" {
			return "the url's host is " + reason + " address"
		}
	}
	return ""
}

// RefusedAddress says which kind of address addr is when webhooks may not
// reach it (a loopback, private, link-local, unspecified or multicast
// address), "" when they may.
func RefusedAddress(addr netip.Addr) string {
	addr = addr.Unmap()
	switch {
	case addr.IsLoopback():
		return "a loopback"
	case addr.IsPrivate():
		return "a private"
	case addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast():
		return "a link-local"
	case addr.IsUnspecified():
		return "an unspecified"
	case addr.IsMulticast(), addr.IsInterfaceLocalMulticast():
		return "a multicast"
	}
	return ""
}

// endpointLog is the management-log entry of a change of an endpoint:
// never its secret.
func endpointLog(tx *configdb.Tx, a Actor, typ string, e WebhookEndpoint) configdb.LogRow {
	data := map[string]any{"id": e.ID, "url": e.URL, "events": e.Events, "description": e.Description, "status": e.Status}
	return configdb.LogRow{EnvironmentID: a.EnvironmentID, ID: config.NewID(config.PrefixLog), Type: typ, CreatedAt: tx.Now,
		APIKeyID: a.APIKeyID, RequestID: a.RequestID, Data: config.MustJSON(data)}
}

var errEndpointNotFound = &config.Error{Code: config.CodeNotFound, Detail: "no such webhook endpoint"}

// CreateEndpoint creates an endpoint (webhooks:write), enabled, with a new
// secret shown in this answer only. At most 20 per environment (422
// too_many).
func (w *Webhooks) CreateEndpoint(ctx context.Context, a Actor, in EndpointInput) (WebhookEndpoint, error) {
	if err := a.Require(config.PermWebhooksWrite); err != nil {
		return WebhookEndpoint{}, err
	}
	if err := w.checkEndpoint(in, true); err != nil {
		return WebhookEndpoint{}, err
	}
	var out WebhookEndpoint
	err := w.db.Write(ctx, func(tx *configdb.Tx) error {
		if err := tx.LockEndpoints(ctx, a.EnvironmentID); err != nil {
			return err
		}
		n, err := tx.CountEndpoints(ctx, a.EnvironmentID)
		if err != nil {
			return err
		}
		if n >= MaxWebhookEndpoints {
			return &config.Error{Code: config.CodeTooMany, Detail: fmt.Sprintf("an environment has at most %d webhook endpoints", MaxWebhookEndpoints)}
		}
		row := &configdb.WebhookEndpointRow{EnvironmentID: a.EnvironmentID, ID: config.NewID(PrefixWebhookEndpoint), URL: *in.URL,
			Events: config.MustJSON(in.Events), Description: in.Description, Status: endpointEnabled, Secret: newSecret(),
			CreatedAt: tx.Now, UpdatedAt: tx.Now}
		if err := tx.InsertEndpoint(ctx, row); err != nil {
			return err
		}
		if out, err = endpointOf(row); err != nil {
			return err
		}
		if err := tx.RecordLogs(ctx, []configdb.LogRow{endpointLog(tx, a, "webhook_endpoint.created", out)}); err != nil {
			return err
		}
		out.Secret = row.Secret
		return nil
	})
	return out, err
}

// GetEndpoint reads an endpoint (webhooks:read).
func (w *Webhooks) GetEndpoint(ctx context.Context, a Actor, id string) (WebhookEndpoint, error) {
	if err := a.Require(config.PermWebhooksRead); err != nil {
		return WebhookEndpoint{}, err
	}
	row, err := w.loadEndpoint(ctx, w.db.Reader, a, id)
	if err != nil {
		return WebhookEndpoint{}, err
	}
	return endpointOf(row)
}

func (w *Webhooks) loadEndpoint(ctx context.Context, r configdb.Reader, a Actor, id string) (*configdb.WebhookEndpointRow, error) {
	if !config.ValidID(PrefixWebhookEndpoint, id) {
		return nil, errEndpointNotFound
	}
	row, err := r.LoadEndpoint(ctx, a.EnvironmentID, id)
	if isNotFound(err) {
		return nil, errEndpointNotFound
	}
	return row, err
}

// ListEndpoints lists the endpoints, newest first (webhooks:read).
func (w *Webhooks) ListEndpoints(ctx context.Context, a Actor, lp ListParams) (Page[WebhookEndpoint], error) {
	if err := a.Require(config.PermWebhooksRead); err != nil {
		return Page[WebhookEndpoint]{}, err
	}
	rows, err := w.db.ListEndpoints(ctx, a.EnvironmentID, lp.Cursor, lp.Limit+1)
	if err != nil {
		return Page[WebhookEndpoint]{}, err
	}
	out := make([]WebhookEndpoint, len(rows))
	for i := range rows {
		if out[i], err = endpointOf(&rows[i]); err != nil {
			return Page[WebhookEndpoint]{}, err
		}
	}
	return page(out, lp.Limit, func(e WebhookEndpoint) string { return e.ID }), nil
}

// UpdateEndpoint changes the fields of in (webhooks:write). A disabled
// endpoint gets no new delivery, and its pending ones wait until it is
// enabled again.
func (w *Webhooks) UpdateEndpoint(ctx context.Context, a Actor, id string, in EndpointInput) (WebhookEndpoint, error) {
	if err := a.Require(config.PermWebhooksWrite); err != nil {
		return WebhookEndpoint{}, err
	}
	if err := w.checkEndpoint(in, false); err != nil {
		return WebhookEndpoint{}, err
	}
	var out WebhookEndpoint
	err := w.db.Write(ctx, func(tx *configdb.Tx) error {
		if err := tx.LockEndpoints(ctx, a.EnvironmentID); err != nil {
			return err
		}
		updates := map[string]any{}
		if in.URL != nil {
			updates["url"] = *in.URL
		}
		if in.EventsSet {
			updates["events"] = configdb.JSON(config.MustJSON(in.Events))
		}
		if in.DescriptionSet {
			updates["description"] = in.Description
		}
		if in.Status != nil {
			updates["status"] = *in.Status
		}
		if _, err := w.loadEndpoint(ctx, tx.Reader, a, id); err != nil {
			return err
		}
		if _, err := tx.UpdateEndpoint(ctx, a.EnvironmentID, id, updates); err != nil {
			return err
		}
		row, err := tx.LoadEndpoint(ctx, a.EnvironmentID, id)
		if err != nil {
			return err
		}
		if out, err = endpointOf(row); err != nil {
			return err
		}
		return tx.RecordLogs(ctx, []configdb.LogRow{endpointLog(tx, a, "webhook_endpoint.updated", out)})
	})
	return out, err
}

// DeleteEndpoint deletes an endpoint and its deliveries (webhooks:write).
func (w *Webhooks) DeleteEndpoint(ctx context.Context, a Actor, id string) error {
	if err := a.Require(config.PermWebhooksWrite); err != nil {
		return err
	}
	return w.db.Write(ctx, func(tx *configdb.Tx) error {
		row, err := w.loadEndpoint(ctx, tx.Reader, a, id)
		if err != nil {
			return err
		}
		e, err := endpointOf(row)
		if err != nil {
			return err
		}
		if _, err := tx.DeleteEndpoint(ctx, a.EnvironmentID, id); err != nil {
			return err
		}
		return tx.RecordLogs(ctx, []configdb.LogRow{endpointLog(tx, a, "webhook_endpoint.deleted", e)})
	})
}

// RotateSecret gives an endpoint a new secret, shown in this answer only
// (webhooks:write). The secret it replaces keeps signing beside it for 24
// h; one that was still signing from an earlier rotation stops at once.
func (w *Webhooks) RotateSecret(ctx context.Context, a Actor, id string) (WebhookEndpoint, error) {
	if err := a.Require(config.PermWebhooksWrite); err != nil {
		return WebhookEndpoint{}, err
	}
	var out WebhookEndpoint
	err := w.db.Write(ctx, func(tx *configdb.Tx) error {
		row, err := w.loadEndpoint(ctx, tx.Reader, a, id)
		if err != nil {
			return err
		}
		secret := newSecret()
		until := tx.Now.Add(RotatedSecretGrace)
		if _, err := tx.UpdateEndpoint(ctx, a.EnvironmentID, id, map[string]any{"secret": secret, "previous_secret": row.Secret,
			"previous_secret_until": until}); err != nil {
			return err
		}
		if out, err = endpointOf(row); err != nil {
			return err
		}
		if err := tx.RecordLogs(ctx, []configdb.LogRow{endpointLog(tx, a, "webhook_endpoint.secret_rotated", out)}); err != nil {
			return err
		}
		out.Secret = secret
		return nil
	})
	return out, err
}
