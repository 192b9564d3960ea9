package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// webhookEndpoint is an endpoint as the API answers it (§19).
type webhookEndpoint struct {
	ID          string   `json:"id"`
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description *string  `json:"description"`
	Status      string   `json:"status"`
	Secret      string   `json:"secret"`
	CreatedAt   string   `json:"created_at"`
}

// webhookDelivery is a delivery as the API answers it.
type webhookDelivery struct {
	ID             string  `json:"id"`
	EventType      string  `json:"event_type"`
	PlanID         string  `json:"plan_id"`
	Status         string  `json:"status"`
	Attempts       int     `json:"attempts"`
	LastStatusCode *int    `json:"last_status_code"`
	LastError      *string `json:"last_error"`
	NextAttemptAt  *string `json:"next_attempt_at"`
	CreatedAt      string  `json:"created_at"`
}

func (a *app) webhooksCommand() *cobra.Command {
	c := group(&cobra.Command{
		Use:   "webhooks",
		Short: "Manage the webhook endpoints and their deliveries",
		Long: `Webhook endpoints receive a signed POST for every plan event they subscribe to
(plan.created, plan.approved, plan.rejected, plan.applied, plan.apply_rejected,
plan.conflicted, plan.federation_failed, plan.expired, plan.rebased), as the
Standard Webhooks convention says. Reading needs webhooks:read, changing
webhooks:write.`,
		Example: `  keenauth webhooks create --url https://ci.shop.example/keenauth --events plan.applied,plan.apply_rejected
  keenauth webhooks list
  keenauth webhooks deliveries whe_…
  keenauth webhooks retry whe_… msg_…`,
	})
	var lf listFlags
	list := &cobra.Command{
		Use:     "list",
		Short:   "List the webhook endpoints, newest first",
		Example: "  keenauth webhooks list",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return listTable(a, cmd, &lf, "/v1/webhook-endpoints", nil, "No webhook endpoints.",
				[]string{"ID", "STATUS", "EVENTS", "URL", "DESCRIPTION"}, func(e webhookEndpoint) []string {
					return []string{e.ID, e.Status, strings.Join(e.Events, ","), e.URL, deref(e.Description)}
				})
		},
	}
	lf.add(list)

	var hookURL, events, description string
	create := &cobra.Command{
		Use:   "create --url URL [--events TYPES] [--description TEXT]",
		Short: "Create a webhook endpoint and print its secret (shown once)",
		Long: `Creates an enabled endpoint and prints its signing secret (whsec_…). The
secret is shown in this answer only: store it where the receiver verifies
the webhook-signature header.

--events is a comma-separated list of event types, or * (the default) for
every type. The URL must be https:// (http:// only where the server allows
it, as keenauthd dev does).

` + exitStatusHelp,
		Example: `  keenauth webhooks create --url https://ci.shop.example/keenauth
  keenauth webhooks create --url https://ci.shop.example/keenauth --events plan.applied,plan.rejected --description "CI"`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if hookURL == "" {
				return cmdLinef("webhooks create needs --url URL")
			}
			body := map[string]any{"url": hookURL, "events": splitList(events)}
			if cmd.Flags().Changed("description") {
				body["description"] = description
			}
			b, _ := json.Marshal(body)
			var e webhookEndpoint
			if _, done, err := a.send(request{method: http.MethodPost, path: "/v1/webhook-endpoints", body: b}, &e); done || err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Created webhook endpoint %s (%s) for %s.\n", e.ID, strings.Join(e.Events, ","), e.URL)
			fmt.Fprintf(a.stdout, "Secret: %s\n", e.Secret)
			fmt.Fprintln(a.stdout, "The secret is shown once: store it now where the receiver verifies the signatures.")
			return nil
		},
	}
	create.Flags().StringVar(&hookURL, "url", "", "the receiver's URL (https://)")
	create.Flags().StringVar(&events, "events", "*", "comma-separated event types, or * for every type")
	create.Flags().StringVar(&description, "description", "", "what the endpoint is for (at most 1,000 characters)")

	del := &cobra.Command{
		Use:     "delete ENDPOINT",
		Short:   "Delete a webhook endpoint and its deliveries",
		Example: "  keenauth webhooks delete whe_01m4qpqtywfs7930tb6kqn5rc5",
		Args:    exactArgs("ENDPOINT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, done, err := a.send(request{method: http.MethodDelete, path: "/v1/webhook-endpoints/" + url.PathEscape(args[0])}, nil)
			if done || err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Deleted webhook endpoint %s.\n", args[0])
			return nil
		},
	}

	var dlf listFlags
	deliveries := &cobra.Command{
		Use:   "deliveries ENDPOINT",
		Short: "List an endpoint's deliveries, newest first, with their status and last error",
		Example: `  keenauth webhooks deliveries whe_01m4qpqtywfs7930tb6kqn5rc5
  keenauth webhooks deliveries whe_01m4qpqtywfs7930tb6kqn5rc5 --json | jq -r '.data[] | select(.status == "failed") | .id'`,
		Args: exactArgs("ENDPOINT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return listTable(a, cmd, &dlf, "/v1/webhook-endpoints/"+url.PathEscape(args[0])+"/deliveries", nil, "No deliveries.",
				[]string{"ID", "STATUS", "EVENT", "PLAN", "ATTEMPTS", "LAST ANSWER", "CREATED"}, func(d webhookDelivery) []string {
					last := "-"
					if d.LastError != nil {
						last = *d.LastError
					} else if d.LastStatusCode != nil {
						last = strconv.Itoa(*d.LastStatusCode)
					}
					return []string{d.ID, d.Status, d.EventType, d.PlanID, strconv.Itoa(d.Attempts), last, d.CreatedAt}
				})
		},
	}
	dlf.add(deliveries)

	retry := &cobra.Command{
		Use:   "retry ENDPOINT DELIVERY",
		Short: "Queue a failed delivery again (same webhook-id)",
		Long: `Queues a failed delivery again, due at once, with its webhook-id: one more
attempt. A delivery that is not failed is refused (409 conflict, exit 3).

` + exitStatusHelp,
		Example: "  keenauth webhooks retry whe_01m4qpqtywfs7930tb6kqn5rc5 msg_01m4qpqtywfs7930tb6kqn5rc5",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return cmdLinef("%s needs ENDPOINT and DELIVERY (got %d arguments)", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var d webhookDelivery
			_, done, err := a.send(request{method: http.MethodPost, body: []byte("{}"),
				path: "/v1/webhook-endpoints/" + url.PathEscape(args[0]) + "/deliveries/" + url.PathEscape(args[1]) + ":retry"}, &d)
			if done || err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Queued delivery %s (%s) again.\n", d.ID, d.EventType)
			return nil
		},
	}
	c.AddCommand(list, create, del, deliveries, retry)
	return c
}

// send sends req and decodes the answer into v (nil: none); with --json it
// prints the answer as is and reports done.
func (a *app) send(req request, v any) (*response, bool, error) {
	cl, err := a.api()
	if err != nil {
		return nil, true, err
	}
	resp, err := cl.do(a.ctx, req)
	if err != nil {
		return nil, true, err
	}
	if a.json {
		writeRaw(a.stdout, resp.body)
		return resp, true, nil
	}
	return resp, false, decode(resp, v)
}

// splitList splits a comma-separated flag, dropping empty items.
func splitList(s string) []string {
	out := []string{}
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
