package plans

import (
	"github.com/keenauth/configplans/config"
	"slices"
	"time"
)

// Actor is the authenticated caller of a request.
type Actor struct {
	EnvironmentID string
	APIKeyID      string
	Permissions   map[string]bool
	RequestID     string
	// KeyCreatedAt is when the API key was created (GET /v1/api-keys/current).
	KeyCreatedAt time.Time
	// Owner is who the API key is for (§17), nil when it names no one.
	Owner *string
}

// CurrentKey is the API key of a request as GET /v1/api-keys/current
// answers it: never its secret or hash.
type CurrentKey struct {
	ID            string   `json:"id"`
	Object        string   `json:"object"`
	EnvironmentID string   `json:"environment_id"`
	Permissions   []string `json:"permissions"`
	CreatedAt     Time     `json:"created_at"`
	Owner         *string  `json:"owner"`
}

// CurrentKey describes the actor's API key, its permissions sorted. Any
// authenticated key may read itself: it needs no permission.
func (a Actor) CurrentKey() CurrentKey {
	perms := make([]string, 0, len(a.Permissions))
	for p, held := range a.Permissions {
		if held {
			perms = append(perms, p)
		}
	}
	slices.Sort(perms)
	return CurrentKey{ID: a.APIKeyID, Object: "api_key", EnvironmentID: a.EnvironmentID, Permissions: perms, CreatedAt: Time(a.KeyCreatedAt), Owner: a.Owner}
}

// Can reports whether the actor holds every permission of perms.
func (a Actor) Can(perms []string) bool {
	for _, p := range perms {
		if !a.Permissions[p] {
			return false
		}
	}
	return true
}

// Require answers insufficient_permissions listing every permission the
// request needs (not only the missing ones) when one is missing.
func (a Actor) Require(perms ...string) error {
	perms = sortedUnique(perms)
	if a.Can(perms) {
		return nil
	}
	return &config.Error{Code: config.CodeInsufficientPermissions, Detail: "the API key lacks a permission this request needs",
		Extra: map[string]any{"required_permissions": perms}}
}

func sortedUnique(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}
