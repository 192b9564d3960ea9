package cli

import (
	"strings"
	"testing"
)

func TestApplyProblemsAreReportedByTheFlagThatWroteThem(t *testing.T) {
	t.Parallel()
	f := applyFlags{confirm: []string{"connection/legacy", "connection/lgacy", "connection/legacy"}, spHost: "Login.Shop", spHostSet: true}
	for _, c := range []struct {
		fe   fieldError
		want string // "" when no flag wrote it
	}{
		{fieldError{"/confirm_deletions/1", "not_a_deletion", "connection/lgacy is not a deletion of this plan"},
			"--confirm-deletion connection/lgacy: not a deletion in this plan (not_a_deletion)"},
		{fieldError{"/confirm_deletions/2", "duplicate", "connection/legacy is confirmed twice"}, "--confirm-deletion connection/legacy: given twice (duplicate)"},
		{fieldError{"/confirm_deletions/7", "invalid", "x"}, "--confirm-deletion: not KIND/KEY (e.g. connection/legacy) (invalid)"},
		{fieldError{"/confirm_deletions", "too_many", "at most 1000 deletions may be confirmed"}, "--confirm-deletion: at most 1000 deletions may be confirmed (too_many)"},
		{fieldError{"/sp_host", "invalid", "sp_host must be …"}, "--sp-host Login.Shop: not a lowercase DNS name of two or more labels, without a port (invalid)"},
		{fieldError{"/resolved_secrets/KEENAUTH_A~1B", "secret_missing", "the plan needs this secret"},
			"--secrets-from-env KEENAUTH_A/B: missing: the plan needs this secret (secret_missing)"},
		{fieldError{"/resolved_secrets/KEENAUTH_X", "invalid_client", "the federation service refused the OIDC material"},
			"--secrets-from-env KEENAUTH_X: the federation service refused the OIDC material (invalid_client)"},
		{fieldError{"/changes/0/spec/display_name", "duplicate", "taken"}, ""},
	} {
		got, ok := f.line(c.fe)
		if ok != (c.want != "") || got != c.want {
			t.Errorf("%s %s:\n got %q, %v\nwant %q", c.fe.Pointer, c.fe.Code, got, ok, c.want)
		}
	}
	unset := applyFlags{}
	if got, _ := unset.line(fieldError{"/sp_host", "sp_host_required", "…"}); !strings.HasPrefix(got, "--sp-host: missing: ") {
		t.Errorf("an sp_host the command line lacks: %q", got)
	}
}
