package plans

import (
	"bytes"
	"github.com/keenauth/configplans/config"
	"testing"
)

// TestChangeLogDataIsWhatEncodingJSONWrites holds the appended data of a
// changed resource's log entry to the encoding of the map it replaced.
func TestChangeLogDataIsWhatEncodingJSONWrites(t *testing.T) {
	for _, c := range []struct {
		kind    config.Kind
		key     string
		version int
	}{
		{config.KindAPI, "orders", 1},
		{config.KindConnection, `a"quoted\\key` + "\n\u2028<&>é", 1234567},
		{config.KindRole, "", 0},
	} {
		got := changeLogData(c.kind, c.key, c.version)
		want := config.MustJSON(map[string]any{"kind": c.kind, "key": c.key, "version": c.version})
		if !bytes.Equal(got, want) {
			t.Errorf("changeLogData(%q, %q, %d) = %s, want %s", c.kind, c.key, c.version, got, want)
		}
	}
}
