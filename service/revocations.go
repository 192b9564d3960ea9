package service

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/keenauth/configplans/plans"
)

// API keys are authenticated from each process's cache (plans.Config
// AuthCacheTTL). A revocation is published on a Redis channel, and every
// replica that follows it drops the key from its cache at once: a revoked
// key stops working fleet-wide within a second. When the message cannot be
// delivered (Redis unreachable for the revoker or for a replica), the
// cache's TTL bounds how long a replica still accepts the key.

// RevocationChannel is the Redis channel of API key revocations of the
// fleet whose keys are under prefix. (Redis channels belong to the server,
// not to a database: two fleets on one server should use two prefixes.)
func RevocationChannel(prefix string) string { return prefix + "api-keys:revoked" }

// publishTimeout bounds the publication of a revocation.
const publishTimeout = 2 * time.Second

// PublishRevocations is plans.Hooks.OnKeyRevoked over Redis: it publishes
// the id of a revoked key to the fleet under prefix.
func PublishRevocations(rdb redis.UniversalClient, prefix string) func(ctx context.Context, id string) error {
	return func(ctx context.Context, id string) error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
		defer cancel()
		return rdb.Publish(ctx, RevocationChannel(prefix), id).Err()
	}
}

// followPing is how long the subscription stays silent before it is
// pinged: a connection that died without a word is found and replaced.
const followPing = 5 * time.Second

// FollowRevocations drops from keys' authentication cache every key whose
// revocation is published under prefix, until ctx ends. Each time the
// subscription is made (at start and after every reconnection) and each
// time it fails, the whole cache is dropped: revocations published while
// nobody listened are not lost, their keys are read again.
func FollowRevocations(ctx context.Context, rdb redis.UniversalClient, prefix string, keys *plans.Keys, log *slog.Logger) {
	failing := false
	follow(ctx, rdb, RevocationChannel(prefix), subscriber{
		subscribed: func() {
			keys.ForgetKeys()
			if failing {
				log.Info("following the API key revocations of other processes again")
				failing = false
			}
		},
		message: keys.ForgetKey,
		failed: func(err error) {
			keys.ForgetKeys()
			if !failing {
				log.Warn("the API key revocations of other processes cannot be followed; cached keys are read again after KEENAUTHD_AUTH_CACHE_TTL",
					"error", err)
				failing = true
			}
		},
	})
}

// subscriber is what follow does with a subscription's news.
type subscriber struct {
	subscribed func()               // the subscription is made (at start and after every reconnection)
	message    func(payload string) // a message came
	failed     func(err error)      // receiving failed; follow waits 200 ms and tries again (nil: nothing to do)
}

// follow listens to channel until ctx ends: a silent subscription is
// pinged every followPing, so that a connection that died without a word
// is found and replaced (go-redis resubscribes on the new one).
func follow(ctx context.Context, rdb redis.UniversalClient, channel string, sub subscriber) {
	ps := rdb.Subscribe(ctx, channel)
	defer ps.Close()
	for ctx.Err() == nil {
		msg, err := ps.ReceiveTimeout(ctx, followPing)
		if ctx.Err() != nil {
			return
		}
		var ne interface{ Timeout() bool }
		switch {
		case err != nil && errors.As(err, &ne) && ne.Timeout():
			_ = ps.Ping(ctx) // a dead connection fails here, and is replaced
			continue
		case err != nil:
			if sub.failed != nil {
				sub.failed(err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				sub.subscribed()
			}
		case *redis.Message:
			sub.message(m.Payload)
		}
	}
}
