package plans

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/keenauth/configplans/config"
)

// TestRevertedFields holds the fields a rebased change writes back to a
// table: then is the spec the source was based on, now the spec today,
// planned the rebased spec; the moved diff is computed as the rebase does.
func TestRevertedFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name               string
		then, now, planned string
		want               []string // details' field and values, in order
	}{
		{"a member put back", `{"a": 1, "b": "x"}`, `{"a": 2, "b": "x"}`, `{"a": 1, "b": "y"}`, []string{"a was changed from 1 to 2"}},
		{"a member written as the source meant", `{"a": 1}`, `{"a": 2}`, `{"a": 3}`, nil},
		{"a member kept as it is now", `{"a": 1}`, `{"a": 2}`, `{"a": 2}`, nil},
		{"a nested member", `{"bf": {"max": 5, "on": true}}`, `{"bf": {"max": 10, "on": true}}`, `{"bf": {"max": 5, "on": false}}`,
			[]string{"bf.max was changed from 5 to 10"}},
		{"a member added since, dropped again", `{"a": 1}`, `{"a": 1, "d": "x"}`, `{"a": 2}`, []string{`d was set to "x"`}},
		{"a member removed since, written again", `{"a": 1, "d": "x"}`, `{"a": 1}`, `{"a": 2, "d": "x"}`, []string{`d ("x") was removed`}},
		{"an element added since, dropped again", `{"callback_urls": ["a"]}`, `{"callback_urls": ["a", "b"]}`, `{"callback_urls": ["a"]}`, []string{`callback_urls gained "b"`}},
		{"an element added since, kept", `{"callback_urls": ["a"]}`, `{"callback_urls": ["a", "b"]}`, `{"callback_urls": ["a", "b", "c"]}`, nil},
		{"an element removed since, brought back", `{"callback_urls": ["a", "b"]}`, `{"callback_urls": ["a"]}`, `{"callback_urls": ["a", "b"]}`, []string{`callback_urls lost "b"`}},
		{"a member inside an element: the whole array", `{"scopes": [{"value": "r", "description": "1"}]}`, `{"scopes": [{"value": "r", "description": "2"}]}`,
			`{"scopes": [{"value": "r", "description": "1"}]}`, []string{`scopes was changed from [{"description":"1","value":"r"}] to [{"description":"2","value":"r"}]`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			then, now := config.Canonical([]byte(tc.then)), config.Canonical([]byte(tc.now))
			fields := revertedFields(config.Diff(then, now), decodeSpec(then), decodeSpec(now), decodeSpec(json.RawMessage(tc.planned)))
			if len(fields) != len(tc.want) {
				t.Fatalf("%d fields reverted (%+v), want %d", len(fields), fields, len(tc.want))
			}
			for i, f := range fields {
				if d := f.detail("k/x", nil); !strings.HasPrefix(d, tc.want[i]) {
					t.Errorf("detail %q, want it to begin with %q", d, tc.want[i])
				}
			}
		})
	}
}

// TestRevertedFieldsOfAResourceDeletedSince: a resource gone since that the
// rebase creates again is one field, the whole resource.
func TestRevertedFieldsOfAResourceDeletedSince(t *testing.T) {
	t.Parallel()
	then := config.Canonical([]byte(`{"a": 1}`))
	fields := revertedFields(config.Diff(then, nil), decodeSpec(then), nil, decodeSpec(then))
	if len(fields) != 1 || !strings.Contains(fields[0].detail("api/x", nil), "api/x was deleted since") {
		t.Errorf("fields = %+v", fields)
	}
}
