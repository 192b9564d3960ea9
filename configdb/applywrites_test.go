package configdb

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// TestLogRecordsAreWhatEncodingJSONWrites holds the appended log rows, with
// the fields they share with the first row put back, to the encoding/json
// records they replaced, as values; a row with the first row's fields
// (at the same time in another zone) carries none of them.
func TestLogRecordsAreWhatEncodingJSONWrites(t *testing.T) {
	type logRec struct {
		ID         string          `json:"id"`
		Type       string          `json:"type"`
		CreatedAt  time.Time       `json:"created_at"`
		APIKeyID   string          `json:"api_key_id"`
		RequestID  string          `json:"request_id"`
		PlanID     *string         `json:"plan_id"`
		RevisionID *string         `json:"revision_id"`
		Data       json.RawMessage `json:"data"`
	}
	plan, rev := "cfgp_1", `cfgr_"2"`
	at := time.Date(2026, 12, 2, 7, 1, 2, 345678000, time.UTC)
	logs := []LogRow{
		{ID: "log_1", Type: "config.applied", CreatedAt: at, APIKeyID: "key_1", RequestID: "req_1", PlanID: &plan, RevisionID: &rev,
			Data: JSON(`{"created":1,"deleted":0}`)},
		{ID: "log_2", Type: "api.created", CreatedAt: at.In(time.FixedZone("x", 3600)), APIKeyID: "key\n1", RequestID: "req_<&>",
			Data: JSON(`{"key":"a\u2028b","kind":"api","version":1}`)},
		{ID: "log_3", Type: "settings.updated", CreatedAt: at.Truncate(time.Second)},
		{ID: "log_4", Type: "api.updated", CreatedAt: at.In(time.FixedZone("y", -7200)), APIKeyID: "key_1", RequestID: "req_1", PlanID: &plan,
			RevisionID: &rev, Data: JSON(`{"key":"b","kind":"api","version":2}`)},
	}
	want := make([]logRec, len(logs))
	for i, l := range logs {
		want[i] = logRec{l.ID, l.Type, l.CreatedAt, l.APIKeyID, l.RequestID, l.PlanID, l.RevisionID, json.RawMessage(l.Data)}
	}
	wantJSON, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	records, shared := logRecords(logs)
	var rows []map[string]any
	if err := json.Unmarshal([]byte(records), &rows); err != nil {
		t.Fatalf("logRecords is not JSON: %v\n%s", err, records)
	}
	if len(rows) != len(logs) || len(rows[0]) != 3 || len(rows[3]) != 3 || rows[1]["own"] != true || rows[2]["own"] != true {
		t.Fatalf("logRecords = %s: rows 1 and 4 should have id, type and data only, 2 and 3 their own fields", records)
	}
	var sharedJSON map[string]any
	sj, err := json.Marshal(logRec{CreatedAt: shared.CreatedAt, APIKeyID: shared.APIKeyID, RequestID: shared.RequestID, PlanID: shared.PlanID,
		RevisionID: shared.RevisionID})
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(sj, &sharedJSON); err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		if row["own"] == true {
			delete(row, "own")
			continue
		}
		for _, f := range []string{"created_at", "api_key_id", "request_id", "plan_id", "revision_id"} {
			row[f] = sharedJSON[f]
		}
	}
	var exp []map[string]any
	if err := json.Unmarshal(wantJSON, &exp); err != nil {
		t.Fatal(err)
	}
	// Row 4's time is the first row's, written in its zone.
	exp[3]["created_at"] = sharedJSON["created_at"]
	if !reflect.DeepEqual(rows, exp) {
		t.Errorf("logRecords = %s, shared %+v\nwant %s", records, shared, wantJSON)
	}
}
