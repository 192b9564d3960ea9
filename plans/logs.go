package plans

import (
	"context"
	"encoding/json"
	"regexp"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// Reads are the reads of an environment beside its plans and revisions:
// the management log and the export of its configuration.
type Reads struct{ core }

// LogEntry is an entry of the management log.
type LogEntry struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	CreatedAt  Time            `json:"created_at"`
	Actor      EventActor      `json:"actor"`
	RequestID  string          `json:"request_id"`
	PlanID     *string         `json:"plan_id"`
	RevisionID *string         `json:"revision_id"`
	Data       json.RawMessage `json:"data"`
}

var logType = regexp.MustCompile(`^[a-z_]+\.[a-z_]+$`)

// ListLogs lists the management log, newest first, optionally of one type.
func (s *Reads) ListLogs(ctx context.Context, a Actor, typ string, lp ListParams) (Page[LogEntry], error) {
	if err := a.Require(config.PermManagementLogsRead); err != nil {
		return Page[LogEntry]{}, err
	}
	if typ != "" && !logType.MatchString(typ) {
		return Page[LogEntry]{}, &config.Error{Code: config.CodeMalformedRequest, Detail: "type is an entry type such as config.applied"}
	}
	rows, err := s.db.ListLogs(ctx, configdb.LogFilter{EnvironmentID: a.EnvironmentID, Type: typ, Before: lp.Cursor, Limit: lp.Limit + 1})
	if err != nil {
		return Page[LogEntry]{}, err
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.APIKeyID
	}
	actors, err := actorsOf(ctx, s.db, a.EnvironmentID, ids)
	if err != nil {
		return Page[LogEntry]{}, err
	}
	out := make([]LogEntry, len(rows))
	for i, r := range rows {
		out[i] = LogEntry{ID: r.ID, Type: r.Type, CreatedAt: Time(r.CreatedAt), Actor: actors[r.APIKeyID], RequestID: r.RequestID,
			PlanID: r.PlanID, RevisionID: r.RevisionID, Data: json.RawMessage(config.Canonical(r.Data))}
	}
	return page(out, lp.Limit, func(e LogEntry) string { return e.ID }), nil
}
