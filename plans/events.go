package plans

import (
	"context"
	"encoding/json"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// Event is an entry of a plan's history.
type Event struct {
	ID        string         `json:"id"`
	Type      string         `json:"type"`
	CreatedAt Time           `json:"created_at"`
	Actor     EventActor     `json:"actor"`
	RequestID string         `json:"request_id"`
	Data      map[string]any `json:"data"`
}

// EventActor identifies who caused an event.
type EventActor struct {
	APIKeyID string `json:"api_key_id"`
	// Owner is who the key is for (§17), null when it names no one.
	Owner *string `json:"owner"`
}

// recordEvent adds an event, caused by a, to a plan's history.
func recordEvent(ctx context.Context, tx *configdb.Tx, a Actor, planID, typ string, data map[string]any) error {
	return tx.RecordEvent(ctx, *eventRow(a, planID, typ, data))
}

// eventRow is a new event of a plan's history (its time is the
// transaction's).
func eventRow(a Actor, planID, typ string, data map[string]any) *configdb.PlanEventRow {
	if data == nil {
		data = map[string]any{}
	}
	return &configdb.PlanEventRow{EnvironmentID: a.EnvironmentID, PlanID: planID, ID: config.NewID(config.PrefixEvent), Type: typ,
		APIKeyID: a.APIKeyID, RequestID: a.RequestID, Data: config.MustJSON(data)}
}

// ListEvents lists a plan's events, oldest first.
func (s *Service) ListEvents(ctx context.Context, a Actor, planID string, lp ListParams) (Page[Event], error) {
	p, err := s.GetPlan(ctx, a, planID)
	if err != nil {
		return Page[Event]{}, err
	}
	rows, err := s.db.ListEvents(ctx, configdb.PlanKey{EnvironmentID: a.EnvironmentID, ID: p.ID}, lp.Cursor, lp.Limit+1)
	if err != nil {
		return Page[Event]{}, err
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.APIKeyID
	}
	actors, err := actorsOf(ctx, s.db, a.EnvironmentID, ids)
	if err != nil {
		return Page[Event]{}, err
	}
	evs := make([]Event, len(rows))
	for i, r := range rows {
		evs[i] = Event{ID: r.ID, Type: r.Type, CreatedAt: Time(r.CreatedAt), Actor: actors[r.APIKeyID], RequestID: r.RequestID}
		_ = json.Unmarshal(r.Data, &evs[i].Data)
	}
	return page(evs, lp.Limit, func(e Event) string { return e.ID }), nil
}
