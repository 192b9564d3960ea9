package plans

import (
	"sync"
	"time"
)

// DefaultAuthCacheTTL is how long an authenticated API key is served from
// the process without reading it again (KEENAUTHD_AUTH_CACHE_TTL).
const DefaultAuthCacheTTL = 5 * time.Second

// keyCache holds the API keys this process authenticated, by id, so that
// a request (an idempotent replay above all) needs no database read to
// authenticate. An entry is served for at most ttl after it was read; a
// revocation drops it at once (Forget, called in the revoking process and,
// through Redis, in every replica). Unknown keys are not kept: a key
// created a moment ago authenticates at once.
//
// A read that raced with a revocation must not put back what it read
// before the revocation: every Forget moves epoch, and a read stores its
// row only if epoch did not move while it ran.
type keyCache struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]cachedKey
	// epoch counts the revocations seen (and the flushes).
	epoch uint64
}

type cachedKey struct {
	envID      string
	secretHash []byte
	// perms is the set of the key's permissions, built once when the key
	// is read and shared by the actors of every request it authenticates:
	// nothing writes to an Actor's Permissions.
	perms     map[string]bool
	createdAt time.Time
	owner     *string
	revoked   bool
	readAt    time.Time // time.Now(), monotonic: the injected clock may jump
}

// permissionSet is the set of a key's permissions.
func permissionSet(perms []string) map[string]bool {
	set := make(map[string]bool, len(perms))
	for _, p := range perms {
		set[p] = true
	}
	return set
}

func newKeyCache(ttl time.Duration) *keyCache {
	return &keyCache{ttl: ttl, m: map[string]cachedKey{}}
}

// get returns the entry of id while it is fresh, and the epoch for a read
// that fills it.
func (c *keyCache) get(id string) (cachedKey, bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.m[id]
	if ok && time.Since(k.readAt) >= c.ttl {
		delete(c.m, id)
		ok = false
	}
	return k, ok, c.epoch
}

// put keeps an entry read while the epoch was epoch, unless a revocation
// came since.
func (c *keyCache) put(id string, k cachedKey, epoch uint64) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != epoch {
		return
	}
	if len(c.m) >= maxCachedKeys {
		c.m = map[string]cachedKey{} // bounded: start again rather than grow
	}
	c.m[id] = k
}

// maxCachedKeys bounds the cache's size.
const maxCachedKeys = 100_000

// forget drops the key id.
func (c *keyCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	delete(c.m, id)
}

// flush drops every key: revocations may have been missed.
func (c *keyCache) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	clear(c.m)
}

// ForgetKey drops the API key id from this process's authentication
// cache: it was revoked, here or by another process.
func (s *Keys) ForgetKey(id string) { s.cache.forget(id) }

// ForgetKeys drops every API key from this process's authentication
// cache: the revocations published while it was not listening may have
// been missed.
func (s *Keys) ForgetKeys() { s.cache.flush() }
