package plans

import (
	"context"
	"unicode"
	"unicode/utf8"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// MaxOwnerLength bounds a key's owner, in characters (§17).
const MaxOwnerLength = 200

// CheckOwner checks a key's owner: 1–200 printable characters, valid UTF-8
// (a space is printable; a control character, a newline included, is not).
func CheckOwner(owner string) error {
	n := utf8.RuneCountInString(owner)
	switch {
	case n == 0:
		return config.Errorf(config.CodeValidationFailed, "the owner is empty; it must be 1 to %d printable characters", MaxOwnerLength)
	case n > MaxOwnerLength:
		return config.Errorf(config.CodeValidationFailed, "the owner is %d characters long; it must be 1 to %d printable characters", n, MaxOwnerLength)
	case !utf8.ValidString(owner):
		return config.Errorf(config.CodeValidationFailed, "the owner is not valid UTF-8")
	}
	for _, r := range owner {
		if !unicode.IsPrint(r) && r != ' ' {
			return config.Errorf(config.CodeValidationFailed, "the owner holds the character %U, which is not printable", r)
		}
	}
	return nil
}

// CreateOwnedKey creates an API key of env holding perms, for owner (§17:
// who the key is for, e.g. an e-mail address), checked by CheckOwner before
// anything is created.
func (s *Keys) CreateOwnedKey(ctx context.Context, envID, owner string, perms []string) (CreatedKey, error) {
	if err := CheckOwner(owner); err != nil {
		return CreatedKey{}, err
	}
	return s.createKey(ctx, envID, perms, &owner)
}

// actorsOf returns the actors of the keys ids of env, with their owners
// (an owner never changes once its key exists, so events and log entries
// read it when they are listed).
func actorsOf(ctx context.Context, db *configdb.DB, envID string, ids []string) (map[string]EventActor, error) {
	owners, err := db.APIKeyOwners(ctx, envID, sortedUnique(ids))
	if err != nil {
		return nil, err
	}
	out := make(map[string]EventActor, len(ids))
	for _, id := range ids {
		out[id] = EventActor{APIKeyID: id, Owner: owners[id]}
	}
	return out, nil
}
