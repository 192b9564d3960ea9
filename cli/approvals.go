package cli

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"
)

// approveCommand is keenauth config approve PLAN [--comment TEXT] (§17).
func (a *app) approveCommand() *cobra.Command {
	var comment string
	var view planView
	c := &cobra.Command{
		Use:   "approve PLAN",
		Short: "Approve a plan, so that it can be applied",
		Long: `Records your approval of PLAN and prints the plan with its approvals
("Approvals: 1 of 2"). The environment's required_approvals says how many
people must approve a plan with changes before it is applied; keys of one
owner count once, and the key that created the plan (or a key of the same
owner) cannot approve it. Approving twice changes nothing. Needs
config:approve.

--comment is at most 1,000 characters, on one line.

` + exitStatusHelp,
		Example: `  keenauth config approve cfgp_01m4qpqtywfs7930tb6kqn5rc5
  keenauth config approve cfgp_01m4qpqtywfs7930tb6kqn5rc5 --comment "Checked the MFA change with Ana"`,
		Args:              exactArgs("PLAN"),
		ValidArgsFunction: a.completePlans("planned"),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]any{}
			if cmd.Flags().Changed("comment") {
				body["comment"] = comment
			}
			return a.review(args[0], "approve", body, view)
		},
	}
	c.Flags().StringVar(&comment, "comment", "", "why you approve (at most 1,000 characters, one line)")
	view.add(a, c, false)
	return c
}

// rejectCommand is keenauth config reject PLAN --comment TEXT (§17).
func (a *app) rejectCommand() *cobra.Command {
	var comment string
	var view planView
	c := &cobra.Command{
		Use:   "reject PLAN --comment TEXT",
		Short: "Reject a plan (or withdraw your own), for good",
		Long: `Rejects PLAN: it can no longer be approved, applied or rebased. Needs
config:approve, or to be the key that created the plan (a withdrawal).
--comment says why (1 to 1,000 characters, one line).

` + exitStatusHelp,
		Example:           `  keenauth config reject cfgp_01m4qpqtywfs7930tb6kqn5rc5 --comment "Turns MFA off in production"`,
		Args:              exactArgs("PLAN"),
		ValidArgsFunction: a.completePlans("planned"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if comment == "" {
				return cmdLinef("config reject needs --comment TEXT: say why the plan is rejected")
			}
			return a.review(args[0], "reject", map[string]any{"comment": comment}, view)
		},
	}
	c.Flags().StringVar(&comment, "comment", "", "why the plan is rejected (1 to 1,000 characters, one line; required)")
	view.add(a, c, false)
	return c
}

// review posts an approval or a rejection and prints the plan.
func (a *app) review(id, verb string, body map[string]any, view planView) error {
	b, _ := json.Marshal(body)
	return a.requestPlan(request{method: http.MethodPost, path: "/v1/config-plans/" + url.PathEscape(id) + ":" + verb, body: b}, view)
}
