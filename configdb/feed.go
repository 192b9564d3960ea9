package configdb

import (
	"context"
	"slices"
	"time"
)

// The feed of an environment's plan events (§19) is read in seq order, and
// seq is commit order: it is given at COMMIT, under the environment's
// advisory lock, by a deferred trigger (migration 0012). An id or a
// sequence given at insert is not commit order: a transaction that took 5
// may commit after one that took 6, and a reader that had gone past 6
// would skip 5. With seq given at commit, a reader that remembers the seq
// of the last event it gave out never skips one. The price: the commits
// that carry events of one environment take its lock in turn, for the
// instant of their commit.
//
// SQLite has one writer, whose transactions commit in the order they
// write: seq is the rowid.

// FeedPosition is a place in an environment's feed of plan events.
type FeedPosition struct {
	Seq int64
}

// FeedEvent is a plan event at its place in the feed, with the types of its
// plan (null when the plan is gone).
type FeedEvent struct {
	PlanEventRow
	Pos       FeedPosition
	PlanTypes JSON
}

// feedRow is what a feed query reads.
type feedRow struct {
	EnvironmentID string
	PlanID        string
	ID            string
	Type          string
	CreatedAt     time.Time
	APIKeyID      string `gorm:"column:api_key_id"`
	RequestID     string
	Data          JSON
	Seq           int64
	PlanTypes     JSON
}

const feedColumns = `SELECT e.environment_id, e.plan_id, e.id, e.type, e.created_at, e.api_key_id, e.request_id, e.data,
	e.seq, p.types AS plan_types
	FROM plan_events e LEFT JOIN config_plans p ON p.environment_id = e.environment_id AND p.id = e.plan_id
	WHERE e.environment_id = ?`

func (r Reader) feed(ctx context.Context, sql string, args ...any) ([]FeedEvent, error) {
	var rows []feedRow
	if err := r.q(ctx).Raw(sql, args...).Scan(&rows).Error; err != nil {
		return nil, interpretError(err)
	}
	out := make([]FeedEvent, len(rows))
	for i, f := range rows {
		out[i] = FeedEvent{PlanEventRow: PlanEventRow{EnvironmentID: f.EnvironmentID, PlanID: f.PlanID, ID: f.ID, Type: f.Type,
			CreatedAt: f.CreatedAt, APIKeyID: f.APIKeyID, RequestID: f.RequestID, Data: f.Data},
			Pos: FeedPosition{Seq: f.Seq}, PlanTypes: f.PlanTypes}
	}
	return out, nil
}

// FeedAfter reads up to limit events of an environment after pos, in feed
// order.
func (r Reader) FeedAfter(ctx context.Context, envID string, pos FeedPosition, limit int) ([]FeedEvent, error) {
	return r.feed(ctx, feedColumns+" AND e.seq > ? ORDER BY e.seq LIMIT ?", envID, pos.Seq, limit)
}

// FeedBefore reads up to limit events of an environment before pos (from
// the newest when pos is nil), newest first.
func (r Reader) FeedBefore(ctx context.Context, envID string, pos *FeedPosition, limit int) ([]FeedEvent, error) {
	if pos == nil {
		return r.feed(ctx, feedColumns+" AND e.seq IS NOT NULL ORDER BY e.seq DESC LIMIT ?", envID, limit)
	}
	return r.feed(ctx, feedColumns+" AND e.seq < ? ORDER BY e.seq DESC LIMIT ?", envID, pos.Seq, limit)
}

// FeedHead is the position after every committed event of an environment:
// where a reader that wants only new events starts.
func (r Reader) FeedHead(ctx context.Context, envID string) (FeedPosition, error) {
	var seq *int64
	err := r.q(ctx).Raw("SELECT max(seq) FROM plan_events WHERE environment_id = ?", envID).Scan(&seq).Error
	if err != nil || seq == nil {
		return FeedPosition{}, interpretError(err)
	}
	return FeedPosition{Seq: *seq}, nil
}

// FeedPositionOf is the position of the event id of an environment; found
// is false when there is no such event.
func (r Reader) FeedPositionOf(ctx context.Context, envID, id string) (pos FeedPosition, found bool, err error) {
	var rows []struct{ Seq *int64 }
	err = r.q(ctx).Raw("SELECT seq FROM plan_events WHERE environment_id = ? AND id = ?", envID, id).Scan(&rows).Error
	if err != nil || len(rows) == 0 || rows[0].Seq == nil {
		return FeedPosition{}, false, interpretError(err)
	}
	return FeedPosition{Seq: *rows[0].Seq}, true, nil
}

// OnEventsCommitted sets fn to be told, after each commit that wrote plan
// events, the environments they belong to (the live stream's wake-up: a
// follower that misses it still reads the feed every second). It is set
// once, before the DB is used.
func (d *DB) OnEventsCommitted(fn func(envIDs []string)) { d.eventsCommitted = fn }

// announce notes that the transaction writes events of evs' environments.
func (tx *Tx) announce(evs ...PlanEventRow) {
	for _, ev := range evs {
		if !slices.Contains(tx.announced, ev.EnvironmentID) {
			tx.announced = append(tx.announced, ev.EnvironmentID)
		}
	}
}

// committed tells the DB's follower of the events tx wrote, once tx
// committed.
func (d *DB) committed(tx *Tx) {
	if tx != nil && len(tx.announced) > 0 && d.eventsCommitted != nil {
		d.eventsCommitted(tx.announced)
	}
}
