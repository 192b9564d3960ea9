package configdb

import (
	"context"
	"math"
	"slices"
	"time"
)

// The feed of an environment's plan events (§19) is read in (xact_id, seq)
// order: xact_id is the id of the transaction that wrote the event, seq the
// order of the inserts (migration 0012). An id or a sequence given at insert
// is not commit order: a transaction that took seq 5 may commit after one
// that took seq 6, and a reader that had gone past 6 would skip 5. So a
// reader reads only the settled events, those whose transaction is older
// than the oldest transaction still running (the xmin of its snapshot):
// every one of them has committed or rolled back, and an event that commits
// later belongs to a transaction at or past that xmin, so it sorts after
// every settled event. A reader that remembers the position of the last
// event it gave out therefore never skips one. The price: an event waits
// for every older transaction of the cluster to end (usually milliseconds;
// a session left idle in a transaction holds the feed back, which
// idle_in_transaction_session_timeout bounds).
//
// SQLite has one writer, and transactions commit in the order they write:
// xact_id is 0 and seq the rowid, every committed event is settled.

// FeedPosition is a place in an environment's feed of plan events.
type FeedPosition struct {
	Xact int64
	Seq  int64
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
	XactID        int64
	Seq           int64
	PlanTypes     JSON
}

const feedColumns = `SELECT e.environment_id, e.plan_id, e.id, e.type, e.created_at, e.api_key_id, e.request_id, e.data,
	e.xact_id, e.seq, p.types AS plan_types
	FROM plan_events e LEFT JOIN config_plans p ON p.environment_id = e.environment_id AND p.id = e.plan_id
	WHERE e.environment_id = ?`

// settledXmin is the xact_id below which every event is settled.
const settledXmin = `pg_snapshot_xmin(pg_current_snapshot())::text::bigint`

func (r Reader) settled() string {
	if r.sqlite {
		return ""
	}
	return " AND e.xact_id < " + settledXmin
}

func (r Reader) feed(ctx context.Context, sql string, args ...any) ([]FeedEvent, error) {
	var rows []feedRow
	if err := r.q(ctx).Raw(sql, args...).Scan(&rows).Error; err != nil {
		return nil, interpretError(err)
	}
	out := make([]FeedEvent, len(rows))
	for i, f := range rows {
		out[i] = FeedEvent{PlanEventRow: PlanEventRow{EnvironmentID: f.EnvironmentID, PlanID: f.PlanID, ID: f.ID, Type: f.Type,
			CreatedAt: f.CreatedAt, APIKeyID: f.APIKeyID, RequestID: f.RequestID, Data: f.Data},
			Pos: FeedPosition{Xact: f.XactID, Seq: f.Seq}, PlanTypes: f.PlanTypes}
	}
	return out, nil
}

// FeedAfter reads up to limit settled events of an environment after pos,
// in feed order.
func (r Reader) FeedAfter(ctx context.Context, envID string, pos FeedPosition, limit int) ([]FeedEvent, error) {
	return r.feed(ctx, feedColumns+" AND (e.xact_id, e.seq) > (?, ?)"+r.settled()+" ORDER BY e.xact_id, e.seq LIMIT ?",
		envID, pos.Xact, pos.Seq, limit)
}

// FeedBefore reads up to limit settled events of an environment before pos
// (from the newest when pos is nil), newest first.
func (r Reader) FeedBefore(ctx context.Context, envID string, pos *FeedPosition, limit int) ([]FeedEvent, error) {
	if pos == nil {
		return r.feed(ctx, feedColumns+r.settled()+" ORDER BY e.xact_id DESC, e.seq DESC LIMIT ?", envID, limit)
	}
	return r.feed(ctx, feedColumns+" AND (e.xact_id, e.seq) < (?, ?)"+r.settled()+" ORDER BY e.xact_id DESC, e.seq DESC LIMIT ?",
		envID, pos.Xact, pos.Seq, limit)
}

// FeedHead is where a reader that wants only new events starts: the
// position past every settled event, and the ids of the events already
// committed that sort after it (their transaction began before an older one
// still running), which the reader is to skip. An event of a transaction
// still running comes after the head, even when that transaction has
// already inserted it.
func (r Reader) FeedHead(ctx context.Context, envID string) (pos FeedPosition, skip []string, err error) {
	if r.sqlite {
		var seq *int64
		err := r.q(ctx).Raw("SELECT max(seq) FROM plan_events WHERE environment_id = ?", envID).Scan(&seq).Error
		if err != nil || seq == nil {
			return FeedPosition{}, nil, interpretError(err)
		}
		return FeedPosition{Seq: *seq}, nil, nil
	}
	var rows []struct {
		Xmin int64
		ID   *string
	}
	err = r.q(ctx).Raw(`WITH s AS (SELECT `+settledXmin+` AS xmin)
		SELECT s.xmin, e.id FROM s LEFT JOIN plan_events e ON e.environment_id = ? AND e.xact_id >= s.xmin`, envID).Scan(&rows).Error
	if err != nil || len(rows) == 0 {
		return FeedPosition{}, nil, interpretError(err)
	}
	for _, row := range rows {
		if row.ID != nil {
			skip = append(skip, *row.ID)
		}
	}
	return FeedPosition{Xact: rows[0].Xmin - 1, Seq: math.MaxInt64}, skip, nil
}

// FeedPositionOf is the position of the event id of an environment; found
// is false when there is no such event.
func (r Reader) FeedPositionOf(ctx context.Context, envID, id string) (pos FeedPosition, found bool, err error) {
	var rows []struct{ XactID, Seq int64 }
	err = r.q(ctx).Raw("SELECT xact_id, seq FROM plan_events WHERE environment_id = ? AND id = ?", envID, id).Scan(&rows).Error
	if err != nil || len(rows) == 0 {
		return FeedPosition{}, false, interpretError(err)
	}
	return FeedPosition{Xact: rows[0].XactID, Seq: rows[0].Seq}, true, nil
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
