package service

import (
	"strings"
	"testing"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/plans"
)

// FuzzApplyRequest: no apply body, however hostile, panics the parser or the
// validation against a plan, and a refused body never echoes a secret value
// it carried.
func FuzzApplyRequest(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `null`, `[]`, `{"resolved_secrets": {"KEENAUTH_CONNECTION_ACME_CLIENT_SECRET": "s3cret"}}`,
		`{"resolved_secrets": {"KEENAUTH_a/b~c": 5, "": ""}, "confirm_deletions": ["connection/legacy", 7, null, "x"]}`,
		`{"sp_host": "login.shop.example", "confirm_deletions": ["connection/legacy", "connection/legacy"]}`,
		`{"resolved_secrets": {"KEENAUTH_X": "a", "KEENAUTH_X": "b"}}`, `{"sp_host": 1}`, `{"x": 1}`, `{"resolved_secrets": []}`,
	} {
		f.Add(seed)
	}
	plan := &plans.Plan{RequiredSecrets: []string{"KEENAUTH_CONNECTION_ACME_CLIENT_SECRET"}, RequiresSPHost: true,
		Changes: []plans.Change{{Kind: config.KindConnection, Key: "legacy", Action: plans.ActionDelete}}}
	f.Fuzz(func(t *testing.T, body string) {
		req, err := ParseApplyRequest([]byte(body))
		if err != nil {
			if _, ok := err.(*config.Error); !ok {
				t.Fatalf("a parse error is not a domain error: %T %v", err, err)
			}
			return
		}
		_, problems := req.Check(plan)
		for name := range req.ResolvedSecrets {
			v := req.Secret(name)
			if len(v) < 16 || strings.Contains(name, v) {
				continue // too short to tell apart from the problem texts, or the name itself
			}
			for _, p := range problems {
				if strings.Contains(p.Detail, v) || strings.Contains(p.Pointer, v) {
					t.Fatalf("problem %+v echoes the secret value", p)
				}
			}
		}
	})
}
