package configdb

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// TestLogRecordsAreWhatEncodingJSONWrites holds the appended log rows to
// the encoding/json records they replaced, as values.
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
	}
	want := make([]logRec, len(logs))
	for i, l := range logs {
		want[i] = logRec{l.ID, l.Type, l.CreatedAt, l.APIKeyID, l.RequestID, l.PlanID, l.RevisionID, json.RawMessage(l.Data)}
	}
	wantJSON, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var got, exp any
	if err := json.Unmarshal([]byte(logRecords(logs)), &got); err != nil {
		t.Fatalf("logRecords is not JSON: %v\n%s", err, logRecords(logs))
	}
	if err := json.Unmarshal(wantJSON, &exp); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, exp) {
		t.Errorf("logRecords = %s\nwant %s", logRecords(logs), wantJSON)
	}
}
