package plans

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDiff(t *testing.T) {
	t.Parallel()
	raw := func(s string) json.RawMessage {
		if s == "" {
			return nil
		}
		return json.RawMessage(s)
	}
	tests := []struct {
		name          string
		before, after string
		want          string // the JSON of the operations
	}{
		{"both absent", "", "", `[]`},
		{"null is absent", "null", "", `[]`},
		{"equal", `{"a":1,"b":[1,2]}`, `{"b":[1,2],"a":1}`, `[]`},
		{"create", "", `{"b":1,"a":"x"}`, `[{"op":"add","path":"","value":{"a":"x","b":1}}]`},
		{"delete", `{"a":1}`, "", `[{"op":"remove","path":""}]`},
		{"delete to null", `{"a":1}`, "null", `[{"op":"remove","path":""}]`},
		{"members", `{"a":1,"b":2,"c":{"x":true,"y":"old"}}`, `{"a":1,"c":{"x":true,"y":"new","z":[]},"d":"added"}`,
			`[{"op":"remove","path":"/b"},{"op":"replace","path":"/c/y","value":"new"},{"op":"add","path":"/c/z","value":[]},{"op":"add","path":"/d","value":"added"}]`},
		{"arrays are replaced whole", `{"s":["openid","email"]}`, `{"s":["openid"]}`,
			`[{"op":"replace","path":"/s","value":["openid"]}]`},
		{"arrays of objects", `{"g":[{"api":"a"}]}`, `{"g":[{"api":"b"}]}`,
			`[{"op":"replace","path":"/g","value":[{"api":"b"}]}]`},
		{"object to null", `{"oidc":{"issuer":"https://i.example"}}`, `{"oidc":null}`,
			`[{"op":"replace","path":"/oidc","value":null}]`},
		{"null to object", `{"oidc":null}`, `{"oidc":{"client_id":"c"}}`,
			`[{"op":"replace","path":"/oidc","value":{"client_id":"c"}}]`},
		{"added null", `{}`, `{"oidc":null}`, `[{"op":"add","path":"/oidc","value":null}]`},
		{"type change", `{"a":"1"}`, `{"a":1}`, `[{"op":"replace","path":"/a","value":1}]`},
		{"escaped paths", `{"a/b":1,"c~d":{"e":1}}`, `{"a/b":2,"c~d":{"e":2}}`,
			`[{"op":"replace","path":"/a~1b","value":2},{"op":"replace","path":"/c~0d/e","value":2}]`},
		{"root type change", `{"a":1}`, `[1]`, `[{"op":"replace","path":"","value":[1]}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ops := Diff(raw(tt.before), raw(tt.after))
			if ops == nil {
				t.Fatal("Diff returned a nil slice")
			}
			got, err := json.Marshal(ops)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Diff =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestDiffValuesAreNotHTMLEscaped(t *testing.T) {
	t.Parallel()
	ops := Diff(json.RawMessage(`{"u":"x"}`), json.RawMessage(`{"u":"https://a.example/?a=1&b=<2>"}`))
	if len(ops) != 1 || string(ops[0].Value) != `"https://a.example/?a=1&b=<2>"` {
		t.Errorf("Diff = %+v", ops)
	}
}

func TestDiffOpJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		op   DiffOp
		want string
	}{
		{DiffOp{Op: "remove", Path: "/a", Value: json.RawMessage(`1`)}, `{"op":"remove","path":"/a"}`},
		{DiffOp{Op: "replace", Path: "/a", Value: json.RawMessage(`null`)}, `{"op":"replace","path":"/a","value":null}`},
		{DiffOp{Op: "replace", Path: "/a"}, `{"op":"replace","path":"/a","value":null}`},
		{DiffOp{Op: "add", Path: "", Value: json.RawMessage(`{"a":1}`)}, `{"op":"add","path":"","value":{"a":1}}`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(tt.op)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("Marshal(%+v) = %s, want %s", tt.op, got, tt.want)
		}
	}
	// A pointer marshals the same way, and a null value survives a round trip.
	var back []DiffOp
	b, _ := json.Marshal([]*DiffOp{{Op: "replace", Path: "/oidc", Value: json.RawMessage(`null`)}})
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]DiffOp{{Op: "replace", Path: "/oidc", Value: json.RawMessage(`null`)}}, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestDiffOfNormalisedSpecs(t *testing.T) {
	t.Parallel()
	before, err := NormalizeSpec(KindApplication, json.RawMessage(`{"display_name": "P", "type": "spa"}`))
	if err != nil {
		t.Fatal(err)
	}
	after, err := NormalizeSpec(KindApplication, json.RawMessage(`{"display_name": "P", "type": "spa", "callback_urls": [], "connections": []}`))
	if err != nil {
		t.Fatal(err)
	}
	if ops := Diff(before, after); len(ops) != 0 {
		t.Errorf("absent optional lists and [] must normalise alike: %v", ops)
	}
}
