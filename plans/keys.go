package plans

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
)

// SecretPrefix starts every API key secret.
const SecretPrefix = "ksk_"

// Actor is the authenticated caller of a request.
type Actor struct {
	EnvironmentID string
	APIKeyID      string
	Permissions   map[string]bool
	RequestID     string
	// KeyCreatedAt is when the API key was created (GET /v1/api-keys/current).
	KeyCreatedAt time.Time
}

// CurrentKey is the API key of a request as GET /v1/api-keys/current
// answers it: never its secret or hash.
type CurrentKey struct {
	ID            string   `json:"id"`
	Object        string   `json:"object"`
	EnvironmentID string   `json:"environment_id"`
	Permissions   []string `json:"permissions"`
	CreatedAt     Time     `json:"created_at"`
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
	return CurrentKey{ID: a.APIKeyID, Object: "api_key", EnvironmentID: a.EnvironmentID, Permissions: perms, CreatedAt: Time(a.KeyCreatedAt)}
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
	return &Error{Code: CodeInsufficientPermissions, Detail: "the API key lacks a permission this request needs",
		Extra: map[string]any{"required_permissions": perms}}
}

func sortedUnique(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}

// ErrUnauthenticated: the key is missing, malformed, unknown or revoked.
var ErrUnauthenticated = &Error{Code: CodeUnauthenticated, Detail: "a valid API key is required"}

// CreateEnvironment creates an environment with its four singletons at
// version 1 holding the defaults of §4.
func (s *Service) CreateEnvironment(ctx context.Context, name string) (Environment, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 128 {
		return Environment{}, Errorf(CodeValidationFailed, "the environment name must have 1 to 128 characters")
	}
	now := s.now()
	env := Environment{ID: NewID(PrefixEnvironment), Name: name, CreatedAt: now}
	err := s.inTx(ctx, 0, func(tx *gorm.DB) error {
		if err := tx.Create(&env).Error; err != nil {
			return err
		}
		for kind, spec := range DefaultSingletons(name) {
			r := Resource{EnvironmentID: env.ID, Kind: kind, Key: SingletonKey, Version: 1, Spec: JSON(spec), CreatedAt: now, UpdatedAt: now}
			if err := tx.Create(&r).Error; err != nil {
				return err
			}
		}
		for _, k := range Kinds {
			if err := tx.Create(&TypeState{EnvironmentID: env.ID, Kind: k.Kind, Generation: 1}).Error; err != nil {
				return err
			}
		}
		return nil
	})
	return env, interpretErrorKeep(err)
}

// CreatedKey is a new API key with its secret, shown once.
type CreatedKey struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
}

// CreateKey creates an API key of env holding perms.
//
// The secret is "ksk_" followed by the environment's and the key's ULIDs and
// 32 random characters (160 bits): authentication finds the key by its
// primary key, then compares a SHA-256 of the whole secret in constant time.
func (s *Service) CreateKey(ctx context.Context, envID string, perms []string) (CreatedKey, error) {
	known := map[string]bool{}
	for _, p := range AllPermissions() {
		known[p] = true
	}
	for _, p := range perms {
		if !known[p] {
			return CreatedKey{}, Errorf(CodeValidationFailed, "unknown permission %q", p)
		}
	}
	if !ValidID(PrefixEnvironment, envID) {
		return CreatedKey{}, fmt.Errorf("environment %q: %w", envID, ErrNotFound)
	}
	var n int64
	if err := s.db.WithContext(ctx).Model(&Environment{}).Where("id = ?", envID).Count(&n).Error; err != nil {
		return CreatedKey{}, interpretError(err)
	}
	if n == 0 {
		return CreatedKey{}, fmt.Errorf("environment %s: %w", envID, ErrNotFound)
	}
	id := NewID(PrefixAPIKey)
	secret := SecretPrefix + strings.TrimPrefix(envID, PrefixEnvironment) + strings.TrimPrefix(id, PrefixAPIKey) + randomBase32(32)
	sum := sha256.Sum256([]byte(secret))
	row := APIKey{EnvironmentID: envID, ID: id, SecretHash: sum[:], Permissions: mustJSON(sortedUnique(perms)), CreatedAt: s.now()}
	if err := s.db.WithContext(ctx).Create(&row).Error; err != nil {
		return CreatedKey{}, interpretError(err)
	}
	return CreatedKey{ID: id, Secret: secret}, nil
}

// RevokeKey revokes an API key of any environment: it reads the key's
// environment first (the one read by key id alone, for `keenauthd key
// revoke` without --env), then revokes it as RevokeEnvironmentKey does.
func (s *Service) RevokeKey(ctx context.Context, keyID string) error {
	if !ValidID(PrefixAPIKey, keyID) {
		return fmt.Errorf("key %q: %w", keyID, ErrNotFound)
	}
	var envs []string
	if err := s.db.WithContext(ctx).Model(&APIKey{}).Where("id = ?", keyID).Limit(1).Pluck("environment_id", &envs).Error; err != nil {
		return interpretError(err)
	}
	if len(envs) == 0 {
		return fmt.Errorf("key %s: %w", keyID, ErrNotFound)
	}
	return s.RevokeEnvironmentKey(ctx, envs[0], keyID)
}

// RevokeEnvironmentKey revokes an API key of env; every statement names the
// environment. Revoking a revoked key is not an error.
func (s *Service) RevokeEnvironmentKey(ctx context.Context, envID, keyID string) error {
	if !ValidID(PrefixAPIKey, keyID) || !ValidID(PrefixEnvironment, envID) {
		return fmt.Errorf("key %q of environment %q: %w", keyID, envID, ErrNotFound)
	}
	res := s.db.WithContext(ctx).Model(&APIKey{}).Where("environment_id = ? AND id = ? AND revoked_at IS NULL", envID, keyID).Update("revoked_at", s.now())
	if res.Error != nil {
		return interpretError(res.Error)
	}
	if res.RowsAffected == 0 {
		var n int64
		if err := s.db.WithContext(ctx).Model(&APIKey{}).Where("environment_id = ? AND id = ?", envID, keyID).Count(&n).Error; err != nil {
			return interpretError(err)
		}
		if n == 0 {
			return fmt.Errorf("key %s of environment %s: %w", keyID, envID, ErrNotFound)
		}
	}
	return nil
}

// Authenticate resolves a bearer secret to an actor.
func (s *Service) Authenticate(ctx context.Context, secret string) (Actor, error) {
	body, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok || len(body) != 26+26+32 {
		return Actor{}, ErrUnauthenticated
	}
	envID, keyID := PrefixEnvironment+body[:26], PrefixAPIKey+body[26:52]
	if !ValidID(PrefixEnvironment, envID) || !ValidID(PrefixAPIKey, keyID) {
		return Actor{}, ErrUnauthenticated
	}
	var row APIKey
	err := s.db.WithContext(ctx).Where("environment_id = ? AND id = ?", envID, keyID).Take(&row).Error
	if err != nil {
		err = interpretError(err)
		if errors.Is(err, ErrNotFound) {
			return Actor{}, ErrUnauthenticated
		}
		return Actor{}, err
	}
	sum := sha256.Sum256([]byte(secret))
	if subtle.ConstantTimeCompare(sum[:], row.SecretHash) != 1 || row.RevokedAt != nil {
		return Actor{}, ErrUnauthenticated
	}
	var perms []string
	if err := json.Unmarshal(row.Permissions, &perms); err != nil {
		return Actor{}, fmt.Errorf("key %s permissions: %w", keyID, err)
	}
	a := Actor{EnvironmentID: envID, APIKeyID: keyID, Permissions: map[string]bool{}, KeyCreatedAt: row.CreatedAt}
	for _, p := range perms {
		a.Permissions[p] = true
	}
	return a, nil
}
