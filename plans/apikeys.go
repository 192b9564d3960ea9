package plans

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// SecretPrefix starts every API key secret.
const SecretPrefix = "ksk_"

// ErrUnauthenticated: the key is missing, malformed, unknown or revoked.
var ErrUnauthenticated = &config.Error{Code: config.CodeUnauthenticated, Detail: "a valid API key is required"}

// Keys are the API keys of the environments: their creation and
// revocation, and the authentication of a request's key, served from a
// cache of the keys this process authenticated (keycache.go).
type Keys struct {
	core
	cache *keyCache
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
func (s *Keys) CreateKey(ctx context.Context, envID string, perms []string) (CreatedKey, error) {
	return s.createKey(ctx, envID, perms, nil)
}

func (s *Keys) createKey(ctx context.Context, envID string, perms []string, owner *string) (CreatedKey, error) {
	known := map[string]bool{}
	for _, p := range config.AllPermissions() {
		known[p] = true
	}
	for _, p := range perms {
		if !known[p] {
			return CreatedKey{}, config.Errorf(config.CodeValidationFailed, "unknown permission %q", p)
		}
	}
	if !config.ValidID(config.PrefixEnvironment, envID) {
		return CreatedKey{}, fmt.Errorf("environment %q: %w", envID, ErrNotFound)
	}
	if ok, err := s.db.EnvironmentExists(ctx, envID); err != nil {
		return CreatedKey{}, err
	} else if !ok {
		return CreatedKey{}, fmt.Errorf("environment %s: %w", envID, ErrNotFound)
	}
	id := config.NewID(config.PrefixAPIKey)
	secret := SecretPrefix + strings.TrimPrefix(envID, config.PrefixEnvironment) + strings.TrimPrefix(id, config.PrefixAPIKey) + config.RandomBase32(32)
	sum := sha256.Sum256([]byte(secret))
	row := configdb.APIKey{EnvironmentID: envID, ID: id, SecretHash: sum[:], Permissions: config.MustJSON(sortedUnique(perms)), Owner: owner}
	if err := s.db.Write(ctx, func(tx *configdb.Tx) error { return tx.CreateAPIKey(ctx, &row) }); err != nil {
		return CreatedKey{}, err
	}
	return CreatedKey{ID: id, Secret: secret}, nil
}

// RevokeKey revokes an API key of any environment: it reads the key's
// environment first (the one read by key id alone, for `keenauthd key
// revoke` without --env), then revokes it as RevokeEnvironmentKey does.
func (s *Keys) RevokeKey(ctx context.Context, keyID string) error {
	if !config.ValidID(config.PrefixAPIKey, keyID) {
		return fmt.Errorf("key %q: %w", keyID, ErrNotFound)
	}
	envID, err := s.db.APIKeyEnvironment(ctx, keyID)
	if isNotFound(err) {
		return fmt.Errorf("key %s: %w", keyID, ErrNotFound)
	}
	if err != nil {
		return err
	}
	return s.RevokeEnvironmentKey(ctx, envID, keyID)
}

// RevokeEnvironmentKey revokes an API key of env; every statement names the
// environment. Revoking a revoked key is not an error. The key leaves this
// process's authentication cache at once, and Hooks.OnKeyRevoked tells the
// other processes (every replica drops it when told); when they cannot be
// told the error is a *RevocationNotPublished, and the key is revoked all
// the same.
func (s *Keys) RevokeEnvironmentKey(ctx context.Context, envID, keyID string) error {
	if !config.ValidID(config.PrefixAPIKey, keyID) || !config.ValidID(config.PrefixEnvironment, envID) {
		return fmt.Errorf("key %q of environment %q: %w", keyID, envID, ErrNotFound)
	}
	var exists bool
	err := s.db.Write(ctx, func(tx *configdb.Tx) error {
		var err error
		exists, err = tx.RevokeAPIKey(ctx, envID, keyID)
		return err
	})
	if err != nil {
		return err
	}
	if !exists {
		return fmt.Errorf("key %s of environment %s: %w", keyID, envID, ErrNotFound)
	}
	s.cache.forget(keyID)
	if s.hooks.OnKeyRevoked != nil {
		if err := s.hooks.OnKeyRevoked(ctx, keyID); err != nil {
			return &RevocationNotPublished{KeyID: keyID, Err: err}
		}
	}
	return nil
}

// RevocationNotPublished: the key is revoked, but the other processes
// could not be told (Redis unreachable); they stop accepting it once their
// cached copy is older than their KEENAUTHD_AUTH_CACHE_TTL.
type RevocationNotPublished struct {
	KeyID string
	Err   error
}

func (e *RevocationNotPublished) Error() string {
	return "key " + e.KeyID + " is revoked, but the revocation could not be published to the other processes: " + e.Err.Error()
}

func (e *RevocationNotPublished) Unwrap() error { return e.Err }

// Authenticate resolves a bearer secret to an actor.
func (s *Keys) Authenticate(ctx context.Context, secret string) (Actor, error) {
	body, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok || len(body) != 26+26+32 {
		return Actor{}, ErrUnauthenticated
	}
	envID, keyID := config.PrefixEnvironment+body[:26], config.PrefixAPIKey+body[26:52]
	if !config.ValidID(config.PrefixEnvironment, envID) || !config.ValidID(config.PrefixAPIKey, keyID) {
		return Actor{}, ErrUnauthenticated
	}
	k, ok, epoch := s.cache.get(keyID)
	if !ok {
		row, err := s.db.LoadAPIKey(ctx, envID, keyID)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				return Actor{}, ErrUnauthenticated
			}
			return Actor{}, err
		}
		k = cachedKey{envID: row.EnvironmentID, secretHash: row.SecretHash, createdAt: row.CreatedAt, owner: row.Owner, revoked: row.RevokedAt != nil,
			readAt: time.Now()}
		var perms []string
		if err := json.Unmarshal(row.Permissions, &perms); err != nil {
			return Actor{}, fmt.Errorf("key %s permissions: %w", keyID, err)
		}
		k.perms = permissionSet(perms)
		s.cache.put(keyID, k, epoch)
	}
	sum := sha256.Sum256([]byte(secret))
	if k.envID != envID || subtle.ConstantTimeCompare(sum[:], k.secretHash) != 1 || k.revoked {
		return Actor{}, ErrUnauthenticated
	}
	return Actor{EnvironmentID: envID, APIKeyID: keyID, Permissions: k.perms, KeyCreatedAt: k.createdAt, Owner: k.owner}, nil
}
