package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// configPolicies is the answer of GET /v1/config-policies.
type configPolicies struct {
	RequireHTTPSCallbacks   bool     `json:"require_https_callbacks"`
	AllowedCallbackHosts    []string `json:"allowed_callback_hosts"`
	MinPasswordLength       *int     `json:"min_password_length"`
	ForbidSocialConnections bool     `json:"forbid_social_connections"`
	MFARequired             bool     `json:"mfa_required"`
	RequiredApprovals       int      `json:"required_approvals"`
	Rules                   []struct {
		Name        string `json:"name"`
		When        string `json:"when"`
		Enforcement string `json:"enforcement"`
		Approvals   *int   `json:"approvals"`
		Message     string `json:"message"`
	} `json:"rules"`
}

func (a *app) policiesCommand() *cobra.Command {
	c := group(&cobra.Command{
		Use:     "policies",
		Short:   "Show the policies and guardrail rules in force",
		Example: "  keenauth policies show",
		Args:    cobra.ArbitraryArgs,
	})
	c.AddCommand(&cobra.Command{
		Use:   "show",
		Short: "Show the environment's policies and guardrail rules",
		Long: `Shows the policies in force in the key's environment, each with its value or
its default, and the guardrail rules: each rule's name, what it does to a change
it catches (warn, block, or ask for approvals), its CEL expression and its
message. Plans and applies are checked against them. It needs config:read.`,
		Example: `  keenauth policies show
  keenauth policies show --json | jq '.rules[] | select(.enforcement == "block") | .name'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.api()
			if err != nil {
				return err
			}
			var pol configPolicies
			raw, err := cl.getJSON(a.ctx, "/v1/config-policies", nil, &pol)
			if err != nil {
				return err
			}
			if a.json {
				writeRaw(a.stdout, raw)
				return nil
			}
			a.renderPolicies(pol)
			return nil
		},
	})
	return c
}

func (a *app) renderPolicies(pol configPolicies) {
	p := newPalette(a.stdout, a.env)
	w := a.stdout
	onOff := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	minLen := "none (the platform's 8)"
	if pol.MinPasswordLength != nil {
		minLen = fmt.Sprint(*pol.MinPasswordLength)
	}
	hosts := "any"
	if len(pol.AllowedCallbackHosts) > 0 {
		hosts = strings.Join(pol.AllowedCallbackHosts, ", ")
	}
	fmt.Fprintln(w, p.bold("Policies:"))
	fmt.Fprintf(w, "  require_https_callbacks    %s\n", onOff(pol.RequireHTTPSCallbacks))
	fmt.Fprintf(w, "  allowed_callback_hosts     %s\n", hosts)
	fmt.Fprintf(w, "  min_password_length        %s\n", minLen)
	fmt.Fprintf(w, "  forbid_social_connections  %s\n", onOff(pol.ForbidSocialConnections))
	fmt.Fprintf(w, "  mfa_required               %s\n", onOff(pol.MFARequired))
	fmt.Fprintf(w, "  required_approvals         %d\n", pol.RequiredApprovals)
	if len(pol.Rules) == 0 {
		fmt.Fprintf(w, "\n%s none\n", p.bold("Rules:"))
		return
	}
	fmt.Fprintf(w, "\n%s %d, evaluated for every change of a plan but no_op, at planning and again at apply:\n", p.bold("Rules:"), len(pol.Rules))
	for _, r := range pol.Rules {
		what := r.Enforcement
		switch {
		case r.Enforcement == "block":
			what = p.red("block")
		case r.Enforcement == "approval" && r.Approvals != nil:
			what = fmt.Sprintf("approval (%d)", *r.Approvals)
		}
		fmt.Fprintf(w, "  %s  %s\n", p.bold(r.Name), what)
		fmt.Fprintf(w, "    when     %s\n", r.When)
		fmt.Fprintf(w, "    message  %s\n", r.Message)
	}
}
