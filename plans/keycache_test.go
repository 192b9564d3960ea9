package plans

import (
	"testing"
	"time"
)

func TestKeyCacheServesAKeyUntilItsTTLOrItsRevocation(t *testing.T) {
	c := newKeyCache(time.Hour)
	if _, ok, _ := c.get("key_a"); ok {
		t.Fatal("an empty cache served a key")
	}
	_, _, epoch := c.get("key_a")
	c.put("key_a", cachedKey{envID: "env_a", readAt: time.Now()}, epoch)
	if k, ok, _ := c.get("key_a"); !ok || k.envID != "env_a" {
		t.Fatalf("the key read was not served: %+v %v", k, ok)
	}
	c.forget("key_a")
	if _, ok, _ := c.get("key_a"); ok {
		t.Fatal("a revoked key was still served")
	}

	// A read that began before a revocation does not put its row back.
	_, _, epoch = c.get("key_b")
	c.forget("key_b")
	c.put("key_b", cachedKey{envID: "env_a", readAt: time.Now()}, epoch)
	if _, ok, _ := c.get("key_b"); ok {
		t.Fatal("a row read before the revocation was kept after it")
	}
	_, _, epoch = c.get("key_c")
	c.flush()
	c.put("key_c", cachedKey{readAt: time.Now()}, epoch)
	if _, ok, _ := c.get("key_c"); ok {
		t.Fatal("a row read before a flush was kept after it")
	}

	// Past the TTL the key is read again.
	_, _, epoch = c.get("key_d")
	c.put("key_d", cachedKey{readAt: time.Now().Add(-2 * time.Hour)}, epoch)
	if _, ok, _ := c.get("key_d"); ok {
		t.Fatal("a key read longer ago than the TTL was served")
	}

	// A TTL of 0 keeps nothing.
	off := newKeyCache(0)
	off.put("key_a", cachedKey{readAt: time.Now()}, 0)
	if _, ok, _ := off.get("key_a"); ok {
		t.Fatal("a cache with no TTL served a key")
	}
}
