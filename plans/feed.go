package plans

import (
	"context"
	"encoding/json"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// Feed reads an environment's plan events as the messages that announce
// them (§19): GET /v1/config-events and the live stream. A key reads the
// events of the plans it may read (config:read and the read permission of
// every type of the plan). The order is the storage's feed order
// (configdb.FeedAfter): a follower that keeps its cursor never skips an
// event, however the transactions that wrote them interleave.
type Feed struct{ core }

// FeedItem is one message of GET /v1/config-events.
type FeedItem struct {
	ID        string      `json:"id"`
	Type      string      `json:"type"`
	Timestamp Time        `json:"timestamp"`
	Data      MessageData `json:"data"`
}

// FeedCursor is a stream's place in its environment's feed.
type FeedCursor struct {
	pos configdb.FeedPosition
}

// FeedBatch is how many events a read of the feed takes at most.
const FeedBatch = 100

// List lists the announced events of the actor's environment whose plan
// the actor may read, newest first (§2 paging; the cursor is an event id).
func (f *Feed) List(ctx context.Context, a Actor, lp ListParams) (Page[FeedItem], error) {
	if err := a.Require(config.PermConfigRead); err != nil {
		return Page[FeedItem]{}, err
	}
	var before *configdb.FeedPosition
	if lp.Cursor != "" {
		pos, found, err := f.db.FeedPositionOf(ctx, a.EnvironmentID, lp.Cursor)
		if err != nil {
			return Page[FeedItem]{}, err
		}
		if !found {
			return Page[FeedItem]{}, &config.Error{Code: config.CodeMalformedRequest, Detail: "cursor names no event of this environment: pass next_cursor of the previous page"}
		}
		before = &pos
	}
	var out []FeedItem
	for len(out) <= lp.Limit {
		rows, err := f.db.FeedBefore(ctx, a.EnvironmentID, before, FeedBatch)
		if err != nil {
			return Page[FeedItem]{}, err
		}
		msgs, err := f.messages(ctx, a, rows)
		if err != nil {
			return Page[FeedItem]{}, err
		}
		for _, m := range msgs {
			out = append(out, FeedItem{ID: m.ID, Type: m.Type, Timestamp: Time(m.Timestamp), Data: m.Data})
		}
		if len(rows) < FeedBatch {
			break
		}
		before = &rows[len(rows)-1].Pos
	}
	if len(out) > lp.Limit+1 {
		out = out[:lp.Limit+1]
	}
	return page(out, lp.Limit, func(it FeedItem) string { return it.ID }), nil
}

// Start places a stream of the actor's environment: after the event
// lastEventID (its Last-Event-ID, to replay every later event), or, when
// there is none or it names no event of the environment (gone with its
// plan's retention), at the feed's head (only new events).
func (f *Feed) Start(ctx context.Context, a Actor, lastEventID string) (FeedCursor, error) {
	if err := a.Require(config.PermConfigRead); err != nil {
		return FeedCursor{}, err
	}
	if config.ValidID(config.PrefixEvent, lastEventID) {
		pos, found, err := f.db.FeedPositionOf(ctx, a.EnvironmentID, lastEventID)
		if err != nil {
			return FeedCursor{}, err
		}
		if found {
			return FeedCursor{pos: pos}, nil
		}
	}
	pos, err := f.db.FeedHead(ctx, a.EnvironmentID)
	if err != nil {
		return FeedCursor{}, err
	}
	return FeedCursor{pos: pos}, nil
}

// Next reads the messages after cur that the actor may read, in feed
// order, from at most one batch of events (read: how many events it went
// past; a full batch means more may follow), and moves cur past them.
func (f *Feed) Next(ctx context.Context, a Actor, cur *FeedCursor) (msgs []Message, read int, err error) {
	rows, err := f.db.FeedAfter(ctx, a.EnvironmentID, cur.pos, FeedBatch)
	if err != nil || len(rows) == 0 {
		return nil, 0, err
	}
	msgs, err = f.messages(ctx, a, rows)
	if err != nil {
		return nil, 0, err
	}
	cur.pos = rows[len(rows)-1].Pos
	return msgs, len(rows), nil
}

// messages are the messages of rows, in their order, that the actor may
// read.
func (f *Feed) messages(ctx context.Context, a Actor, rows []configdb.FeedEvent) ([]Message, error) {
	evs := make([]configdb.PlanEventRow, 0, len(rows))
	for _, r := range rows {
		if r.PlanTypes == nil {
			continue // the plan is gone
		}
		var kinds []config.Kind
		if err := json.Unmarshal(r.PlanTypes, &kinds); err != nil || !a.Can(readPerms(kinds)) {
			continue
		}
		evs = append(evs, r.PlanEventRow)
	}
	if len(evs) == 0 {
		return nil, nil
	}
	return BuildMessages(ctx, f.db.Reader, a.EnvironmentID, evs)
}
