package plans

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// TestPlannedUpdateHoldsNoSliceOfTodaysSpec: an update's diff names the
// old values it replaces, copied out of today's spec, so that the plan does
// not keep every spec it was computed against alive (a plan's size more
// memory while it is stored and answered).
func TestPlannedUpdateHoldsNoSliceOfTodaysSpec(t *testing.T) {
	before := []byte(`{"display_name":"Before","identifier":"https://api.example/x","scopes":[],"token_lifetime_seconds":3600}`)
	after := json.RawMessage(`{"display_name":"After","identifier":"https://api.example/x","scopes":[],"token_lifetime_seconds":3600}`)
	ps := &planState{cur: state{config.KindAPI: {"x": &configdb.Resource{Kind: string(config.KindAPI), Key: "x", Version: 1, Spec: before}}}}
	c, _ := ps.change(entry{kind: config.KindAPI, key: "x", spec: after})
	if c.Action != ActionUpdate || len(c.Diff) != 1 || string(c.Diff[0].Old) != `"Before"` {
		t.Fatalf("change = %s %+v, want an update replacing the display name", c.Action, c.Diff)
	}
	copy(before, bytes.Repeat([]byte("x"), len(before)))
	if string(c.Diff[0].Old) != `"Before"` {
		t.Errorf("the diff's old value changed with today's spec (%s): it is a slice of it", c.Diff[0].Old)
	}
}
