package config

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
		{"delete", `{"b":[1],"a":1}`, "", `[{"op":"remove","path":"","old":{"a":1,"b":[1]}}]`},
		{"delete to null", `{"a":1}`, "null", `[{"op":"remove","path":"","old":{"a":1}}]`},
		{"members", `{"a":1,"b":2,"c":{"x":true,"y":"old"}}`, `{"a":1,"c":{"x":true,"y":"new","z":[]},"d":"added"}`,
			`[{"op":"remove","path":"/b","old":2},{"op":"replace","path":"/c/y","old":"old","value":"new"},{"op":"add","path":"/c/z","value":[]},{"op":"add","path":"/d","value":"added"}]`},
		{"arrays without identity are replaced whole", `{"s":["openid","email"]}`, `{"s":["openid"]}`,
			`[{"op":"replace","path":"/s","old":["openid","email"],"value":["openid"]}]`},
		{"arrays of objects without identity", `{"g":[{"api":"a"}]}`, `{"g":[{"api":"b"}]}`,
			`[{"op":"replace","path":"/g","old":[{"api":"a"}],"value":[{"api":"b"}]}]`},
		{"object to null", `{"oidc":{"issuer":"https://i.example"}}`, `{"oidc":null}`,
			`[{"op":"replace","path":"/oidc","old":{"issuer":"https://i.example"},"value":null}]`},
		{"null to object", `{"oidc":null}`, `{"oidc":{"client_id":"c"}}`,
			`[{"op":"replace","path":"/oidc","old":null,"value":{"client_id":"c"}}]`},
		{"added null", `{}`, `{"oidc":null}`, `[{"op":"add","path":"/oidc","value":null}]`},
		{"type change", `{"a":"1"}`, `{"a":1}`, `[{"op":"replace","path":"/a","old":"1","value":1}]`},
		{"escaped paths", `{"a/b":1,"c~d":{"e":1}}`, `{"a/b":2,"c~d":{"e":2}}`,
			`[{"op":"replace","path":"/a~1b","old":1,"value":2},{"op":"replace","path":"/c~0d/e","old":1,"value":2}]`},
		{"root type change", `{"a":1}`, `[1]`, `[{"op":"replace","path":"","old":{"a":1},"value":[1]}]`},
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
	ops := Diff(json.RawMessage(`{"u":"x&<y>"}`), json.RawMessage(`{"u":"https://a.example/?a=1&b=<2>"}`))
	if len(ops) != 1 || string(ops[0].Value) != `"https://a.example/?a=1&b=<2>"` || string(ops[0].Old) != `"x&<y>"` {
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
		{DiffOp{Op: "add", Path: "/a", Old: json.RawMessage(`1`), Value: json.RawMessage(`2`)}, `{"op":"add","path":"/a","value":2}`},
		{DiffOp{Op: "remove", Path: "/a", Old: json.RawMessage(`null`)}, `{"op":"remove","path":"/a","old":null}`},
		{DiffOp{Op: "remove", Path: "", Old: json.RawMessage(`{"a":1}`), Value: json.RawMessage(`2`)}, `{"op":"remove","path":"","old":{"a":1}}`},
		{DiffOp{Op: "replace", Path: "/mfa", Old: json.RawMessage(`"optional"`), Value: json.RawMessage(`"required"`)},
			`{"op":"replace","path":"/mfa","old":"optional","value":"required"}`},
		{DiffOp{Op: "replace", Path: "/oidc", Old: json.RawMessage(`null`), Value: json.RawMessage(`{}`)}, `{"op":"replace","path":"/oidc","old":null,"value":{}}`},
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
	// A pointer marshals the same way, and a null value or old survives a
	// round trip.
	var back []DiffOp
	want := []DiffOp{{Op: "replace", Path: "/oidc", Old: json.RawMessage(`{"client_id":"c"}`), Value: json.RawMessage(`null`)},
		{Op: "remove", Path: "/description", Old: json.RawMessage(`null`)}}
	b, _ := json.Marshal([]*DiffOp{&want[0], &want[1]})
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, back); diff != "" {
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

// TestDiffIdentityArrays covers every array whose elements have an
// identity (§13): removals at old indexes highest first, then changes inside
// kept elements at their index after the removals, then additions at new
// indexes lowest first; a reordering of kept elements is one replace.
func TestDiffIdentityArrays(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		before, after string
		want          string
	}{
		{"connections: one removed", `{"connections":["a","legacy","b"]}`, `{"connections":["a","b"]}`,
			`[{"op":"remove","path":"/connections/1","old":"legacy"}]`},
		{"connections: removed highest first, added lowest first", `{"connections":["a","b","c","d"]}`, `{"connections":["x","b","d","y"]}`,
			`[{"op":"remove","path":"/connections/2","old":"c"},{"op":"remove","path":"/connections/0","old":"a"},` +
				`{"op":"add","path":"/connections/0","value":"x"},{"op":"add","path":"/connections/3","value":"y"}]`},
		{"connections: reordered", `{"connections":["a","b","c"]}`, `{"connections":["b","a","c"]}`,
			`[{"op":"replace","path":"/connections","old":["a","b","c"],"value":["b","a","c"]}]`},
		{"connections: reordered with an addition", `{"connections":["a","b"]}`, `{"connections":["b","x","a"]}`,
			`[{"op":"replace","path":"/connections","old":["a","b"],"value":["b","x","a"]}]`},
		{"connections: every element replaced", `{"connections":["a"]}`, `{"connections":["b","c"]}`,
			`[{"op":"remove","path":"/connections/0","old":"a"},{"op":"add","path":"/connections/0","value":"b"},{"op":"add","path":"/connections/1","value":"c"}]`},
		{"connections: emptied", `{"connections":["a","b"]}`, `{"connections":[]}`,
			`[{"op":"remove","path":"/connections/1","old":"b"},{"op":"remove","path":"/connections/0","old":"a"}]`},
		{"connections: from empty", `{"connections":[]}`, `{"connections":["a","b"]}`,
			`[{"op":"add","path":"/connections/0","value":"a"},{"op":"add","path":"/connections/1","value":"b"}]`},
		{"callback_urls", `{"callback_urls":["https://a.example/cb"]}`, `{"callback_urls":["https://a.example/cb","http://localhost:3000/cb"]}`,
			`[{"op":"add","path":"/callback_urls/1","value":"http://localhost:3000/cb"}]`},
		{"allowed_identifiers", `{"allowed_identifiers":["email","phone"],"mfa":"optional"}`, `{"allowed_identifiers":["username","phone"],"mfa":"required"}`,
			`[{"op":"remove","path":"/allowed_identifiers/0","old":"email"},{"op":"add","path":"/allowed_identifiers/0","value":"username"},` +
				`{"op":"replace","path":"/mfa","old":"optional","value":"required"}]`},
		{"oidc.scopes", `{"oidc":{"client_id":"c","scopes":["openid","email"]}}`, `{"oidc":{"client_id":"c","scopes":["openid","profile"]}}`,
			`[{"op":"remove","path":"/oidc/scopes/1","old":"email"},{"op":"add","path":"/oidc/scopes/1","value":"profile"}]`},
		{"api scopes by value", `{"scopes":[{"value":"a","description":"A"},{"value":"b"},{"value":"c","description":"C"}]}`,
			`{"scopes":[{"value":"a","description":"All of A"},{"value":"c"},{"value":"d","description":"D"}]}`,
			`[{"op":"remove","path":"/scopes/1","old":{"value":"b"}},` +
				`{"op":"replace","path":"/scopes/0/description","old":"A","value":"All of A"},` +
				`{"op":"remove","path":"/scopes/1/description","old":"C"},` +
				`{"op":"add","path":"/scopes/2","value":{"description":"D","value":"d"}}]`},
		{"api scopes: a description added", `{"scopes":[{"value":"a"}]}`, `{"scopes":[{"value":"a","description":"A"}]}`,
			`[{"op":"add","path":"/scopes/0/description","value":"A"}]`},
		{"api scopes reordered", `{"scopes":[{"value":"a"},{"value":"b"}]}`, `{"scopes":[{"value":"b"},{"value":"a"}]}`,
			`[{"op":"replace","path":"/scopes","old":[{"value":"a"},{"value":"b"}],"value":[{"value":"b"},{"value":"a"}]}]`},
		{"permissions by api and scope", `{"permissions":[{"api":"o","scope":"read"},{"api":"o","scope":"write"},{"api":"p","scope":"read"}]}`,
			`{"permissions":[{"api":"o","scope":"read"},{"api":"p","scope":"read"},{"api":"p","scope":"write"}]}`,
			`[{"op":"remove","path":"/permissions/1","old":{"api":"o","scope":"write"}},{"op":"add","path":"/permissions/2","value":{"api":"p","scope":"write"}}]`},
		{"permissions: same api, other scope is another element", `{"permissions":[{"api":"o","scope":"read"}]}`, `{"permissions":[{"api":"o","scope":"write"}]}`,
			`[{"op":"remove","path":"/permissions/0","old":{"api":"o","scope":"read"}},{"op":"add","path":"/permissions/0","value":{"api":"o","scope":"write"}}]`},
		{"api_grants by api, their scopes by value", `{"api_grants":[{"api":"a","scopes":["r"]},{"api":"b","scopes":["r","w"]},{"api":"c","scopes":[]}]}`,
			`{"api_grants":[{"api":"b","scopes":["w","x"]},{"api":"c","scopes":[]},{"api":"d","scopes":["r"]}]}`,
			`[{"op":"remove","path":"/api_grants/0","old":{"api":"a","scopes":["r"]}},` +
				`{"op":"remove","path":"/api_grants/0/scopes/0","old":"r"},{"op":"add","path":"/api_grants/0/scopes/1","value":"x"},` +
				`{"op":"add","path":"/api_grants/2","value":{"api":"d","scopes":["r"]}}]`},
		{"api_grants: a grant's scopes reordered", `{"api_grants":[{"api":"a","scopes":["r","w"]}]}`, `{"api_grants":[{"api":"a","scopes":["w","r"]}]}`,
			`[{"op":"replace","path":"/api_grants/0/scopes","old":["r","w"],"value":["w","r"]}]`},
		{"duplicates are one replace", `{"connections":["a","a"]}`, `{"connections":["a"]}`,
			`[{"op":"replace","path":"/connections","old":["a","a"],"value":["a"]}]`},
		{"an element without identity is one replace", `{"scopes":[{"value":"a"},{"description":"no value"}]}`, `{"scopes":[{"value":"a"}]}`,
			`[{"op":"replace","path":"/scopes","old":[{"value":"a"},{"description":"no value"}],"value":[{"value":"a"}]}]`},
		{"not an array any more", `{"connections":["a"]}`, `{"connections":null}`,
			`[{"op":"replace","path":"/connections","old":["a"],"value":null}]`},
		{"scopes elsewhere have no identity", `{"x":{"scopes":["a","b"]}}`, `{"x":{"scopes":["a"]}}`,
			`[{"op":"replace","path":"/x/scopes","old":["a","b"],"value":["a"]}]`},
		{"equal", `{"connections":["a","b"],"scopes":[{"value":"a"}]}`, `{"scopes":[{"value":"a"}],"connections":["a","b"]}`, `[]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ops := Diff(json.RawMessage(tt.before), json.RawMessage(tt.after))
			got, err := json.Marshal(ops)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Diff =\n%s\nwant\n%s", got, tt.want)
			}
			checkDiffApplies(t, "", json.RawMessage(tt.before), json.RawMessage(tt.after), ops)
		})
	}
}
