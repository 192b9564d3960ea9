package idempotency

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/keenauth/configplans/test/testdb"
)

// newTestRedis returns a client of the test Redis and a key prefix of the
// test's own, whose keys are deleted when the test ends.
func newTestRedis(t *testing.T) (*redis.Client, string) { return testdb.Redis(t) }
