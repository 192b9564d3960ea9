package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisStore keeps idempotency records in Redis, for the replicas of the
// service to share.
//
// A record is one hash at <prefix>idem:{<scope>}:<sha256(key) in hex>. The
// client's key is hashed so that its bytes never become Redis key syntax;
// the braces make the scope a Cluster hash tag. Fields: state ("running" or
// "done"), fp (the request's fingerprint), owner (the owner token, while
// running), and once done status, header (JSON object) and body (the
// response's bytes). A request's body is never stored: only its fingerprint.
//
// Every operation is one Lua script, hence atomic and one round trip
// (EVALSHA, falling back to EVAL the first time a server lacks the script).
type RedisStore struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewRedisStore returns a store over rdb whose keys all start with prefix
// (e.g. "keenauth:"). The prefix must not contain braces, which would move
// the Cluster hash tag.
//
// Give rdb short timeouts (dial and read of a few hundred milliseconds) and
// few dial attempts (go-redis's DialerRetries defaults to 5, 100ms apart):
// a claim that cannot reach Redis should turn into a quick 503.
func NewRedisStore(rdb redis.UniversalClient, prefix string) *RedisStore {
	return &RedisStore{rdb: rdb, prefix: prefix}
}

func (s *RedisStore) redisKey(scope, key string) string {
	sum := sha256.Sum256([]byte(key))
	var b strings.Builder
	b.Grow(len(s.prefix) + len("idem:{}:") + len(scope) + hex.EncodedLen(len(sum)))
	b.WriteString(s.prefix)
	b.WriteString("idem:{")
	b.WriteString(scope)
	b.WriteString("}:")
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], sum[:])
	b.Write(h[:])
	return b.String()
}

var _ Store = (*RedisStore)(nil)

// claimScript: KEYS[1] record; ARGV fingerprint, new owner token, lease ms.
// One HMGET reads what any outcome needs: a replay, the most frequent
// answer of a record that exists, needs no second call.
var claimScript = redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 'state', 'fp', 'status', 'header', 'body')
if not v[1] then
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'state', 'running', 'fp', ARGV[1], 'owner', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return {'claimed'}
end
if v[2] ~= ARGV[1] then
  return {'mismatch'}
end
if v[1] == 'done' then
  return {'replay', v[3], v[4], v[5]}
end
return {'in_use', redis.call('PTTL', KEYS[1])}
`)

// renewScript: KEYS[1] record; ARGV owner token, lease ms.
var renewScript = redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 'state', 'owner')
if v[1] ~= 'running' or v[2] ~= ARGV[1] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// completeScript: KEYS[1] record; ARGV owner token, retention ms, status,
// header JSON, body.
var completeScript = redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 'state', 'owner')
if v[1] ~= 'running' or v[2] ~= ARGV[1] then
  return 0
end
redis.call('HDEL', KEYS[1], 'owner')
redis.call('HSET', KEYS[1], 'state', 'done', 'status', ARGV[3], 'header', ARGV[4], 'body', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// releaseScript: KEYS[1] record; ARGV owner token.
var releaseScript = redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 'state', 'owner')
if v[1] ~= 'running' or v[2] ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
`)

// Claim implements Store.
func (s *RedisStore) Claim(ctx context.Context, scope, key, fingerprint string, lease time.Duration) (ClaimResult, error) {
	if err := checkTTL("lease", lease); err != nil {
		return ClaimResult{}, err
	}
	token := newToken()
	reply, err := claimScript.Run(ctx, s.rdb, []string{s.redisKey(scope, key)},
		fingerprint, token, lease.Milliseconds()).Slice()
	if err != nil {
		return ClaimResult{}, unavailable("claim", err)
	}
	res, err := parseClaimReply(reply)
	if err != nil {
		return ClaimResult{}, fmt.Errorf("idempotency claim: %w", err)
	}
	if res.Outcome == Claimed {
		res.Token = token
	}
	return res, nil
}

func parseClaimReply(reply []any) (ClaimResult, error) {
	if len(reply) == 0 {
		return ClaimResult{}, errors.New("empty reply")
	}
	switch reply[0] {
	case "claimed":
		return ClaimResult{Outcome: Claimed}, nil
	case "mismatch":
		return ClaimResult{Outcome: Mismatch}, nil
	case "in_use":
		if len(reply) != 2 {
			return ClaimResult{}, fmt.Errorf("malformed in_use reply %v", reply)
		}
		ms, _ := reply[1].(int64) // -1 (no TTL) cannot happen; it gives the 1s floor
		return ClaimResult{Outcome: InUse, RetryAfter: retryAfter(time.Duration(ms) * time.Millisecond)}, nil
	case "replay":
		if len(reply) != 4 {
			return ClaimResult{}, fmt.Errorf("malformed replay reply %v", reply)
		}
		statusText, _ := reply[1].(string)
		headerJSON, _ := reply[2].(string)
		body, _ := reply[3].(string)
		status, err := strconv.Atoi(statusText)
		if err != nil {
			return ClaimResult{}, fmt.Errorf("stored status %q: %w", statusText, err)
		}
		header, err := decodeHeader([]byte(headerJSON))
		if err != nil {
			return ClaimResult{}, fmt.Errorf("stored header: %w", err)
		}
		resp := &Response{Status: status, Header: header, Body: []byte(body)}
		return ClaimResult{Outcome: Replay, Response: resp}, nil
	default:
		return ClaimResult{}, fmt.Errorf("unknown reply %v", reply)
	}
}

// Renew implements Store.
func (s *RedisStore) Renew(ctx context.Context, scope, key, token string, lease time.Duration) error {
	if err := checkTTL("lease", lease); err != nil {
		return err
	}
	return ownedOp("renew", renewScript.Run(ctx, s.rdb, []string{s.redisKey(scope, key)},
		token, lease.Milliseconds()))
}

// Complete implements Store.
func (s *RedisStore) Complete(ctx context.Context, scope, key, token string, resp Response, retention time.Duration) error {
	if err := checkTTL("retention", retention); err != nil {
		return err
	}
	header := resp.Header
	if header == nil {
		header = map[string]string{}
	}
	headerJSON, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("idempotency complete: %w", err)
	}
	return ownedOp("complete", completeScript.Run(ctx, s.rdb, []string{s.redisKey(scope, key)},
		token, retention.Milliseconds(), resp.Status, headerJSON, resp.Body))
}

// Release implements Store.
func (s *RedisStore) Release(ctx context.Context, scope, key, token string) error {
	return ownedOp("release", releaseScript.Run(ctx, s.rdb, []string{s.redisKey(scope, key)}, token))
}

// ownedOp reads the reply of a script that acts only for the owner: 1 done,
// 0 refused.
func ownedOp(op string, cmd *redis.Cmd) error {
	n, err := cmd.Int()
	if err != nil {
		return unavailable(op, err)
	}
	if n != 1 {
		return errLeaseLost(op)
	}
	return nil
}

// CheckEvictionPolicy reads Redis's maxmemory-policy and reports whether it
// can evict idempotency records. Only "noeviction" is safe: the allkeys-*
// policies evict any key, and the volatile-* ones evict keys that have a TTL,
// which every record has. The service warns at start when evicting is true
// (SPEC §9): an evicted record lets a retry run the operation again.
func CheckEvictionPolicy(ctx context.Context, rdb redis.UniversalClient) (policy string, evicting bool, err error) {
	cfg, err := rdb.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil {
		return "", false, unavailable("read maxmemory-policy", err)
	}
	policy, ok := cfg["maxmemory-policy"]
	if !ok {
		return "", false, errors.New("idempotency: Redis did not report maxmemory-policy")
	}
	return policy, policyEvicts(policy), nil
}

func policyEvicts(policy string) bool {
	return policy != "noeviction"
}
