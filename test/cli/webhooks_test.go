package cli_test

import (
	"regexp"
	"strings"
	"testing"
)

// TestWebhooksThroughTheCLI (§19): webhooks create prints the secret once,
// list shows the endpoint without it, deliveries lists what plan events
// queued, retry queues a failed delivery again and refuses one that is not
// failed (409: exit 3, as every conflict), and delete removes the endpoint.
func TestWebhooksThroughTheCLI(t *testing.T) {
	t.Parallel()
	h := setup(t)
	created := must(t, h.run(t, "webhooks", "create", "--url", "https://ci.shop.example/keenauth", "--events", "plan.created, plan.applied",
		"--description", "CI"))
	secret := regexp.MustCompile(`Secret: (whsec_\S+)`).FindStringSubmatch(created.stdout)
	id := regexp.MustCompile(`whe_[0-9a-z]{26}`).FindString(created.stdout)
	if secret == nil || id == "" || !strings.Contains(created.stdout, "shown once") {
		t.Fatalf("create printed:\n%s", created.stdout)
	}
	listed := must(t, h.run(t, "webhooks", "list"))
	for _, want := range []string{id, "enabled", "plan.created,plan.applied", "https://ci.shop.example/keenauth", "CI"} {
		if !strings.Contains(listed.stdout, want) {
			t.Errorf("list lacks %q:\n%s", want, listed.stdout)
		}
	}
	if strings.Contains(listed.stdout+must(t, h.run(t, "webhooks", "list", "--json")).stdout, secret[1]) {
		t.Errorf("list shows the secret")
	}
	wantExit(t, h.run(t, "webhooks", "create", "--url", "http://ci.shop.example/keenauth"), 1)
	wantExit(t, h.run(t, "webhooks", "create"), 2)

	must(t, h.run(t, "config", "plan", "-f", writeJSON(t, "doc.json", noSecretDocument())))
	deliveries := must(t, h.run(t, "webhooks", "deliveries", id))
	msg := regexp.MustCompile(`msg_[0-9a-z]{26}`).FindString(deliveries.stdout)
	if msg == "" || !strings.Contains(deliveries.stdout, "pending") || !strings.Contains(deliveries.stdout, "plan.created") {
		t.Fatalf("deliveries:\n%s", deliveries.stdout)
	}
	refused := h.run(t, "webhooks", "retry", id, msg)
	wantExit(t, refused, 3)
	if !strings.Contains(refused.stderr, "failed") {
		t.Errorf("the refused retry says:\n%s", refused.stderr)
	}
	h.GormDB().Exec("UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL WHERE id = ?", msg)
	retried := must(t, h.run(t, "webhooks", "retry", id, msg))
	if !strings.Contains(retried.stdout, "Queued delivery "+msg) {
		t.Errorf("retry printed:\n%s", retried.stdout)
	}
	wantExit(t, h.run(t, "webhooks", "retry", id), 2)
	must(t, h.run(t, "webhooks", "delete", id))
	if l := must(t, h.run(t, "webhooks", "list")); !strings.Contains(l.stdout, "No webhook endpoints.") {
		t.Errorf("list after delete:\n%s", l.stdout)
	}
	wantExit(t, h.run(t, "webhooks", "delete", id), 1)
}
