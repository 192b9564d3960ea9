package configdb_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/keenauth/configplans/configdb"
)

// TestAppliedLogsAreTheRowsRecordLogsWrites holds the log rows written by
// an apply's record (their shared fields sent once) to the same rows
// written by RecordLogs one by one: rows with the first row's fields (one
// of them at the same time in another zone), and rows with fields of their
// own (another time, key, request, no plan, no revision, another
// revision).
func TestAppliedLogsAreTheRowsRecordLogsWrites(t *testing.T) {
	t.Parallel()
	d, now := testEnvironment(t)
	if err := d.DB.Create(&configdb.Environment{ID: "env_b", Name: "env_b", CreatedAt: now}).Error; err != nil {
		t.Fatal(err)
	}
	plan, rev, other := "cfgp_1", "cfgr_1", `cfgr_"2"`
	at := time.Date(2026, 12, 2, 7, 1, 2, 345678000, time.UTC)
	shared := configdb.LogRow{CreatedAt: at, APIKeyID: "key_1", RequestID: "req_1", PlanID: &plan, RevisionID: &rev}
	row := func(id string, change func(l *configdb.LogRow)) configdb.LogRow {
		l := shared
		l.ID, l.Type, l.Data = id, "api.created", configdb.JSON(`{"key":"a\u2028b","kind":"api","version":1}`)
		if change != nil {
			change(&l)
		}
		return l
	}
	logs := []configdb.LogRow{
		row("log_1", func(l *configdb.LogRow) {
			l.Type, l.Data = "config.applied", configdb.JSON(`{"created":1,"deleted":0}`)
		}),
		row("log_2", nil),
		row("log_3", func(l *configdb.LogRow) { l.CreatedAt = at.In(time.FixedZone("x", 3600)) }),
		row("log_4", func(l *configdb.LogRow) { l.CreatedAt = at.Add(time.Microsecond) }),
		row("log_5", func(l *configdb.LogRow) { l.APIKeyID, l.RequestID = "key\n2", "req_<&>" }),
		row("log_6", func(l *configdb.LogRow) { l.PlanID, l.RevisionID = nil, nil }),
		row("log_7", func(l *configdb.LogRow) { l.RevisionID = &other }),
		row("log_8", func(l *configdb.LogRow) { l.Type = "settings.updated" }),
	}
	if err := configdb.InsertLogsAsApplied(d.DB, "env_a", logs); err != nil {
		t.Fatal(err)
	}
	each := make([]configdb.LogRow, len(logs))
	for i, l := range logs {
		l.EnvironmentID = "env_b"
		each[i] = l
	}
	db := configdb.New(d.DB, func() time.Time { return now }, configdb.Options{})
	if err := db.InTx(context.Background(), 0, func(tx *configdb.Tx) error { return tx.RecordLogs(context.Background(), each) }); err != nil {
		t.Fatal(err)
	}
	read := func(env string) []configdb.LogRow {
		var rows []configdb.LogRow
		if err := d.DB.Where("environment_id = ?", env).Order("id").Find(&rows).Error; err != nil {
			t.Fatal(err)
		}
		for i := range rows {
			rows[i].EnvironmentID = ""
			rows[i].CreatedAt = rows[i].CreatedAt.UTC()
			var data any
			if err := json.Unmarshal(rows[i].Data, &data); err != nil {
				t.Fatal(err)
			}
			rows[i].Data, _ = json.Marshal(data)
		}
		return rows
	}
	got, want := read("env_a"), read("env_b")
	if len(got) != len(logs) || !reflect.DeepEqual(got, want) {
		t.Errorf("applied log rows:\n%+v\nwant (RecordLogs):\n%+v", got, want)
	}
}
