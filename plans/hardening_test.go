package plans

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/federation"
)

// The unit tests of the third security review (§23); the API tests are in
// test/api/hardening_test.go, the HTTP edge in test/security.

func TestReferrersAreNamedOnlyToAKeyThatReadsThem(t *testing.T) {
	t.Parallel()
	refs := []string{"application/portal", "role/admin", "application/shop", "application_branding/portal"}
	tests := []struct {
		perms []string
		want  []string
	}{
		{[]string{"applications:read", "roles:read", "branding:read"}, refs},
		{nil, []string{"2 applications", "1 role", "1 application branding"}},
		{[]string{"roles:read"}, []string{"role/admin", "2 applications", "1 application branding"}},
	}
	for _, tt := range tests {
		a := Actor{Permissions: map[string]bool{}}
		for _, p := range tt.perms {
			a.Permissions[p] = true
		}
		if d := cmp.Diff(tt.want, referrerPhrases(refs, a.canRead)); d != "" {
			t.Errorf("permissions %v (-want +got):\n%s", tt.perms, d)
		}
	}
	if d := cmp.Diff(refs, referrerPhrases(refs, nil)); d != "" {
		t.Errorf("no filter (-want +got):\n%s", d)
	}
}

func TestRejectedMaterialKeepsAtMost100DistinctProblems(t *testing.T) {
	t.Parallel()
	var errs []config.FieldError
	for i := range 150 {
		fe := config.FieldError{Pointer: fmt.Sprintf("/changes/0/spec/oidc/scopes/%d", i), Code: "invalid"}
		errs = append(errs, fe, fe)
	}
	got, truncated := capRejected(errs, false)
	if len(got) != federation.MaxRejectedErrors || !truncated || got[99].Pointer != "/changes/0/spec/oidc/scopes/99" {
		t.Errorf("150 problems twice: %d kept, truncated %v", len(got), truncated)
	}
	got, truncated = capRejected(errs[:40], false)
	if len(got) != 20 || truncated {
		t.Errorf("20 problems twice: %d kept, truncated %v", len(got), truncated)
	}
	if _, truncated = capRejected(errs[:2], true); !truncated {
		t.Errorf("a truncation of the federation client is kept")
	}
}

func TestTestReasonIsCutTo1024Characters(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 2000)
	if got := *capReason(&long); got != strings.Repeat("é", MaxTestReason) {
		t.Errorf("a 2,000-character reason: %d characters kept", len([]rune(got)))
	}
	short := strings.Repeat("x", MaxTestReason)
	if got := capReason(&short); *got != short {
		t.Errorf("a 1,024-character reason was cut")
	}
	if capReason(nil) != nil {
		t.Errorf("no reason became one")
	}
}
