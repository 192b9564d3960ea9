package cli_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/test/apitest"
)

// TestApprovalsThroughTheCLI (§17): under required_approvals 2, config
// plan and show print "Approvals: n of 2" with each approver; an apply
// refused for want of approvals exits 3 and says how many are missing and
// the approve command; config approve by two owners lets it apply; config
// reject needs --comment and makes the plan rejected.
func TestApprovalsThroughTheCLI(t *testing.T) {
	t.Parallel()
	h := setup(t)
	r := h.Do(apitest.Request{Method: "PUT", Path: "/internal/v1/environments/" + h.EnvID + "/policies", Secret: apitest.InternalToken,
		Body: map[string]any{"required_approvals": 2}})
	if r.Status != http.StatusOK {
		t.Fatalf("policies: %d %s", r.Status, r.Body)
	}
	key := func(owner string) string {
		k, err := h.Domain.Keys.CreateOwnedKey(context.Background(), h.EnvID, owner, config.AllPermissions())
		if err != nil {
			t.Fatal(err)
		}
		return k.Secret
	}
	as := func(secret string, args ...string) result {
		return h.runWith(t, invocation{env: map[string]string{"KEENAUTH_SECRET_KEY": secret}}, args...)
	}
	bob, carol := key("bob@shop.example"), key("carol@shop.example")

	file := writeJSON(t, "doc.json", noSecretDocument())
	planned := must(t, h.run(t, "config", "plan", "-f", file))
	for _, want := range []string{"Approvals: 0 of 2", "needs 2 more approval(s)", "keenauth config approve cfgp_"} {
		if !strings.Contains(planned.stdout, want) {
			t.Fatalf("config plan lacks %q:\n%s", want, planned.stdout)
		}
	}
	id := must(t, h.run(t, "config", "plan", "-f", file, "--json")).JSON(t)["id"].(string)

	refused := h.run(t, "config", "apply", id)
	wantExit(t, refused, 3)
	for _, want := range []string{"approval", "2 more approval(s) (0 of 2 received)", "keenauth config approve " + id} {
		if !strings.Contains(refused.stderr, want) {
			t.Errorf("the refused apply lacks %q:\n%s", want, refused.stderr)
		}
	}
	// The creator cannot approve its own plan.
	wantExit(t, h.run(t, "config", "approve", id), 1)

	approved := must(t, as(bob, "config", "approve", id, "--comment", "Checked with Ana"))
	for _, want := range []string{"Approvals: 1 of 2", "bob@shop.example at ", ": Checked with Ana", "needs 1 more approval(s)"} {
		if !strings.Contains(approved.stdout, want) {
			t.Errorf("config approve lacks %q:\n%s", want, approved.stdout)
		}
	}
	wantExit(t, h.run(t, "config", "apply", id), 3)
	must(t, as(carol, "config", "approve", id))
	shown := must(t, h.run(t, "config", "show", id))
	for _, want := range []string{"Approvals: 2 of 2", "bob@shop.example at ", "carol@shop.example at "} {
		if !strings.Contains(shown.stdout, want) {
			t.Errorf("config show lacks %q:\n%s", want, shown.stdout)
		}
	}
	if strings.Contains(shown.stdout, "more approval") {
		t.Errorf("config show asks for more approvals:\n%s", shown.stdout)
	}
	must(t, h.run(t, "config", "apply", id))

	// A rejection needs --comment; then the plan is rejected for good.
	doc := map[string]any{"apis": map[string]any{"billing": map[string]any{"display_name": "Billing", "identifier": "https://api.shop.example/billing",
		"token_lifetime_seconds": 60}}}
	other := must(t, h.run(t, "config", "plan", "-f", writeJSON(t, "doc2.json", doc), "--json")).JSON(t)["id"].(string)
	wantExit(t, as(bob, "config", "reject", other), 2)
	rejected := must(t, as(bob, "config", "reject", other, "--comment", "Not this week"))
	if !strings.Contains(rejected.stdout, "This plan was rejected") || !strings.Contains(rejected.stdout, "Rejected by bob@shop.example at ") ||
		strings.Contains(rejected.stdout, "config rebase") {
		t.Errorf("config reject:\n%s", rejected.stdout)
	}
	wantExit(t, as(carol, "config", "approve", other), 3)
	wantExit(t, h.run(t, "config", "apply", other), 3)
	if list := must(t, h.run(t, "plans", "list", "--status", "rejected")); !strings.Contains(list.stdout, other) {
		t.Errorf("plans list --status rejected:\n%s", list.stdout)
	}
}
