package cli

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"
)

// connectionTest is the answer of POST /v1/connections/{key}:test.
type connectionTest struct {
	Connection string  `json:"connection"`
	Status     string  `json:"status"`
	Reason     *string `json:"reason"`
	TestedAt   string  `json:"tested_at"`
}

func (a *app) connectionsCommand() *cobra.Command {
	c := group(&cobra.Command{
		Use:     "connections",
		Short:   "Test the enterprise connections",
		Example: "  keenauth connections test acme-sso",
	})
	test := &cobra.Command{
		Use:   "test KEY",
		Short: "Test an enterprise connection's OIDC material at its identity provider",
		Long: `Asks the federation service to test the enterprise connection's current OIDC
material (issuer, client id, scopes, client secret) and prints the result,
which the API records against that material: a later change of the material
makes the test stale.

Exits 0 when the test succeeded and 1 when it ran and failed (the reason is
printed), as for a refused request: a script that must tell the two apart
reads the status of --json.

` + exitStatusHelp,
		Example: `  keenauth connections test acme-sso
  keenauth connections test acme-sso --json | jq -r .reason`,
		Args: exactArgs("KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.api()
			if err != nil {
				return err
			}
			// A generated key makes a retry after a 503 or a lost answer
			// safe; the test records one result either way.
			resp, err := cl.do(a.ctx, request{method: http.MethodPost, path: "/v1/connections/" + url.PathEscape(args[0]) + ":test",
				body: []byte("{}"), idempotencyKey: newIdempotencyKey()})
			if err != nil {
				return err
			}
			var ct connectionTest
			if err := decode(resp, &ct); err != nil {
				return err
			}
			if ct.Status != "succeeded" {
				a.exit = ExitRefused
			}
			if a.json {
				writeRaw(a.stdout, resp.body)
				return nil
			}
			renderConnectionTest(a, &ct)
			return nil
		},
	}
	c.AddCommand(test)
	return c
}

func renderConnectionTest(a *app, ct *connectionTest) {
	p := newPalette(a.stdout, a.env)
	if ct.Status == "succeeded" {
		fmt.Fprintf(a.stdout, "Connection %s: the test %s at %s.\n", p.bold(ct.Connection), p.green("succeeded"), ct.TestedAt)
		return
	}
	fmt.Fprintf(a.stdout, "Connection %s: the test %s at %s.\n", p.bold(ct.Connection), p.red(ct.Status), ct.TestedAt)
	if ct.Reason != nil && *ct.Reason != "" {
		fmt.Fprintf(a.stdout, "  reason: %s\n", *ct.Reason)
	}
	fmt.Fprintln(a.stdout, "Check the connection's OIDC material and client secret, apply the fix, then test again.")
}
