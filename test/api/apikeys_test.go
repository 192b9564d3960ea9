package api_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/test/apitest"
)

// currentKey is the answer of GET /v1/api-keys/current.
type currentKey struct {
	ID            string   `json:"id"`
	Object        string   `json:"object"`
	EnvironmentID string   `json:"environment_id"`
	Permissions   []string `json:"permissions"`
	CreatedAt     string   `json:"created_at"`
}

func getCurrentKey(t *testing.T, e *apitest.Env, secret string) currentKey {
	t.Helper()
	r := e.Do(apitest.Request{Method: "GET", Path: "/v1/api-keys/current", Secret: secret})
	if r.Status != http.StatusOK {
		t.Fatalf("GET /v1/api-keys/current: %d %s", r.Status, r.Body)
	}
	if strings.Contains(string(r.Body), secret) || strings.Contains(string(r.Body), strings.TrimPrefix(secret, plans.SecretPrefix)) {
		t.Errorf("the answer holds the secret: %s", r.Body)
	}
	var k currentKey
	r.Decode(t, &k)
	return k
}

func TestCurrentAPIKeyAnswersTheRequestsKeyWithItsPermissionsSorted(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	ctx := context.Background()
	before := time.Now().UTC().Truncate(time.Millisecond)
	// Given out of order and repeated: answered sorted, once each.
	some, err := e.Domain.Keys.CreateKey(ctx, e.EnvID, []string{config.PermManagementLogsRead, "apis:read", config.PermConfigRead, "apis:read"})
	if err != nil {
		t.Fatal(err)
	}
	none, err := e.Domain.Keys.CreateKey(ctx, e.EnvID, nil)
	if err != nil {
		t.Fatal(err)
	}
	otherEnv, otherSecret := otherEnvironment(t, e)

	all := slices.Sorted(slices.Values(config.AllPermissions()))
	for name, c := range map[string]struct {
		secret string
		env    string
		id     string // "" when the test does not know it
		perms  []string
	}{
		"every permission":             {e.Secret, e.EnvID, "", all},
		"a few permissions":            {some.Secret, e.EnvID, some.ID, []string{"apis:read", "config:read", "management-logs:read"}},
		"no permission at all":         {none.Secret, e.EnvID, none.ID, []string{}},
		"a key of another environment": {otherSecret, otherEnv, "", all},
	} {
		t.Run(name, func(t *testing.T) {
			k := getCurrentKey(t, e, c.secret)
			if k.Object != "api_key" || k.EnvironmentID != c.env {
				t.Errorf("object %q, environment %q; want api_key, %s", k.Object, k.EnvironmentID, c.env)
			}
			if c.id != "" && k.ID != c.id {
				t.Errorf("id = %s, want %s", k.ID, c.id)
			}
			if !strings.Contains(c.secret, strings.TrimPrefix(k.ID, config.PrefixAPIKey)) {
				t.Errorf("id %s is not the key of the secret", k.ID)
			}
			if diff := cmp.Diff(c.perms, k.Permissions); diff != "" {
				t.Errorf("permissions (-want +got):\n%s", diff)
			}
		})
	}

	k := getCurrentKey(t, e, some.Secret)
	created, err := time.Parse(time.RFC3339Nano, k.CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
	if created.Before(before) || created.After(time.Now()) {
		t.Errorf("created_at %s is not when the key was created (after %s)", k.CreatedAt, before.Format(time.RFC3339Nano))
	}
	if again := getCurrentKey(t, e, some.Secret); again.CreatedAt != k.CreatedAt {
		t.Errorf("created_at moved: %s then %s", k.CreatedAt, again.CreatedAt)
	}
}

func TestCurrentAPIKeyRefusesEveryBearerThatIsNotAValidKey(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	revoked, err := e.Domain.Keys.CreateKey(context.Background(), e.EnvID, config.AllPermissions())
	if err != nil {
		t.Fatal(err)
	}
	if r := e.Do(apitest.Request{Method: "GET", Path: "/v1/api-keys/current", Secret: revoked.Secret}); r.Status != http.StatusOK {
		t.Fatalf("before the revocation: %d %s", r.Status, r.Body)
	}
	if err := e.Domain.Keys.RevokeKey(context.Background(), revoked.ID); err != nil {
		t.Fatal(err)
	}
	for name, secret := range map[string]string{
		"no key":     "-",
		"unknown":    plans.SecretPrefix + strings.Repeat("0", 26+26+32),
		"malformed":  "ksk_nope",
		"revoked":    revoked.Secret,
		"wrong case": strings.ToUpper(e.Secret),
	} {
		t.Run(name, func(t *testing.T) {
			r := e.Do(apitest.Request{Method: "GET", Path: "/v1/api-keys/current", Secret: secret})
			expectProblem(t, r, http.StatusUnauthorized, "unauthenticated")
		})
	}
	r := e.Do(apitest.Request{Method: "POST", Path: "/v1/api-keys/current", Body: map[string]any{}})
	expectProblem(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
}
