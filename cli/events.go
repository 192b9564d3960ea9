package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// eventMessage is a message of GET /v1/config-events and of the live
// stream (§19).
type eventMessage struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Timestamp string          `json:"timestamp,omitempty"`
	Data      json.RawMessage `json:"data"`
}

// eventData is what a line shows of a message's data.
type eventData struct {
	PlanID string `json:"plan_id"`
	Actor  struct {
		APIKeyID string  `json:"api_key_id"`
		Owner    *string `json:"owner"`
	} `json:"actor"`
	Plan struct {
		Status  string  `json:"status"`
		Summary summary `json:"summary"`
	} `json:"plan"`
	Code *string `json:"code"`
}

// streamReconnect is how long keenauth events --follow waits before it
// reconnects a stream that ended.
const streamReconnect = time.Second

func (a *app) eventsCommand() *cobra.Command {
	var follow bool
	var limit int
	c := &cobra.Command{
		Use:   "events",
		Short: "Show the environment's plan events, and with --follow each new one as it comes",
		Long: `Shows the latest plan events of the environment, oldest first, as
GET /v1/config-events lists them: plans created, approved, rejected, applied,
refused, conflicted, expired and rebased — only those of the plans the key may
read. With --follow it then prints each new event as it comes, from the live
stream (GET /v1/config-events/stream), as kubectl get events -w does, until
interrupted. A stream that ends (a restarting server, a network cut) is
reconnected with the id of the last event printed, so that no event is lost
or printed twice.

With --json each event is one JSON object on a line: {"id", "type",
"timestamp", "data"} (a live event has no timestamp: the stream does not
carry one; its id, a ULID, holds the time it was made).`,
		Example: `  keenauth events
  keenauth events --follow
  keenauth events --follow --json | jq -r 'select(.type == "plan.applied") | .data.plan_id'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("limit") && (limit < 1 || limit > 100) {
				return cmdLinef("--limit must be from 1 to 100")
			}
			cl, err := a.api()
			if err != nil {
				return err
			}
			q := map[string][]string{}
			if limit > 0 {
				q["limit"] = []string{fmt.Sprint(limit)}
			}
			var pg page[eventMessage]
			if _, err := cl.getJSON(a.ctx, "/v1/config-events", q, &pg); err != nil {
				return err
			}
			p := newPalette(a.stdout, a.env)
			last := ""
			for i := len(pg.Data) - 1; i >= 0; i-- {
				a.printEvent(p, pg.Data[i])
				last = pg.Data[i].ID
			}
			if !follow {
				if len(pg.Data) == 0 && !a.json {
					fmt.Fprintln(a.stdout, "No events.")
				}
				return nil
			}
			return a.followEvents(cl, p, last)
		},
	}
	c.Flags().BoolVarP(&follow, "follow", "f", false, "after the latest events, print each new one as it comes, until interrupted")
	c.Flags().IntVar(&limit, "limit", 0, "show this many of the latest events first, 1 to 100 (default: the API's, 20)")
	return c
}

// printEvent prints one message: a JSON line, or a line of columns.
func (a *app) printEvent(p palette, m eventMessage) {
	if a.json {
		b, _ := json.Marshal(m)
		fmt.Fprintf(a.stdout, "%s\n", b)
		return
	}
	var d eventData
	_ = json.Unmarshal(m.Data, &d)
	at := m.Timestamp
	if at == "" {
		at = idTime(m.ID)
	}
	actor := d.Actor.APIKeyID
	if d.Actor.Owner != nil {
		actor += " (" + *d.Actor.Owner + ")"
	}
	line := fmt.Sprintf("%-24s  %-22s  %-31s  %-10s  %-15s  %s", at, m.Type, d.PlanID, d.Plan.Status, d.Plan.Summary.short(), actor)
	if d.Code != nil {
		line += "  " + p.red(*d.Code)
	}
	fmt.Fprintln(a.stdout, strings.TrimRight(line, " "))
}

// idTime is the time held by an id's ULID (its first 48 bits, in
// milliseconds), "" when it is not one.
func idTime(id string) string {
	_, u, ok := strings.Cut(id, "_")
	if !ok || len(u) != 26 {
		return ""
	}
	const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
	var ms uint64
	for _, c := range u[:10] {
		i := strings.IndexRune(alphabet, c)
		if i < 0 {
			return ""
		}
		ms = ms<<5 | uint64(i)
	}
	return time.UnixMilli(int64(ms)).UTC().Format("2006-01-02T15:04:05.000Z")
}

// followEvents prints the live stream's events after the event last ("":
// from now), reconnecting after last whenever the stream ends, until the
// command is interrupted. A refusal that cannot pass by waiting (401, 403)
// ends it; a 429 or 503 is waited out.
func (a *app) followEvents(cl *client, p palette, last string) error {
	for {
		err := a.readStream(cl, p, &last)
		if a.ctx.Err() != nil {
			return a.ctx.Err()
		}
		wait := streamReconnect
		var ae *apiError
		if errors.As(err, &ae) {
			if ae.status != http.StatusTooManyRequests && ae.status != http.StatusServiceUnavailable {
				return err
			}
			if ae.problem.RetryAfter != nil {
				wait = time.Duration(*ae.problem.RetryAfter) * time.Second
			}
		}
		reason := "the event stream ended"
		if err != nil {
			reason = "the event stream failed: " + err.Error()
		}
		if err := cl.wait(a.ctx, wait, fmt.Sprintf("%s; reconnecting in %s", reason, roundWait(wait))); err != nil {
			return err
		}
	}
}

// readStream reads one connection of the live stream, printing its events
// and keeping the id of the last one in last.
func (a *app) readStream(cl *client, p palette, last *string) error {
	u := *cl.baseURL
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/config-events/stream"
	ctx, cancel := context.WithCancel(a.ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+cl.secret)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", "keenauth-cli")
	if *last != "" {
		req.Header.Set("Last-Event-ID", *last)
	}
	resp, err := cl.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		r := &response{status: resp.StatusCode, header: resp.Header, body: b}
		if isRedirect(r.status) {
			return newRedirectError(r, u.String())
		}
		return newAPIError(r)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var m eventMessage
	for sc.Scan() {
		field, value, _ := strings.Cut(sc.Text(), ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "":
			if sc.Text() == "" && m.ID != "" {
				a.printEvent(p, m)
				*last = m.ID
				m = eventMessage{}
			}
		case "id":
			m.ID = value
		case "event":
			m.Type = value
		case "data":
			m.Data = json.RawMessage(value)
		}
	}
	return sc.Err()
}
