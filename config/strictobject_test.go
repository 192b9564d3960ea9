package config

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// strictObjectByDecoder is StrictObject as encoding/json's Decoder reads
// it, the reference of the scan that StrictObject does.
func strictObjectByDecoder(body []byte, dst *map[string]json.RawMessage) error {
	notObject := &Error{Code: CodeMalformedRequest, Detail: "the request body must be a JSON object"}
	d := json.NewDecoder(bytes.NewReader(body))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return notObject
	}
	*dst = map[string]json.RawMessage{}
	var repeated []FieldError
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return notObject
		}
		key, _ := t.(string)
		var value json.RawMessage
		if err := d.Decode(&value); err != nil {
			return notObject
		}
		if _, dup := (*dst)[key]; dup {
			repeated = append(repeated, FieldError{Pointer: Pointer(key), Code: CodeMalformedRequest,
				Detail: "This member is repeated in its object."})
			continue
		}
		(*dst)[key] = value
	}
	if _, err := d.Token(); err != nil {
		return notObject
	}
	if len(repeated) > 0 {
		return Problems(CodeMalformedRequest, repeated)
	}
	if _, err := d.Token(); err != io.EOF {
		return &Error{Code: CodeMalformedRequest, Detail: "the request body has data after the JSON object"}
	}
	return nil
}

var strictObjectSeeds = []string{
	``, ` `, `{}`, ` { } `, `{`, `}`, `[]`, `null`, `"a"`, `1`,
	`{"a":1}`, `{"a":1,}`, `{,"a":1}`, `{"a" 1}`, `{"a":}`, `{"a"}`, `{1:2}`, `{"a":1 "b":2}`,
	`{"a":1}x`, `{"a":1} {}`, `{"a":1}]`, `{"a":1}  `, "{\"a\":1}\n\t\r",
	`{"a":1,"a":2}`, `{"a":1,"b":{"a":[1,2,{"c":"}"}]},"a":3}`, `{"a":1,"a":2} x`,
	`{"a":"x\"}y"}`, `{"a\u0041":true,"b":false,"c":null}`, `{"a":-1.5e3,"b":[]}`,
	`{"a":[1,2}`, `{"a":{"b":1]}`, `{"a":tru}`, `{"a":01}`, `{"a":"unterminated}`,
	`{"a":1}}`, `{"a":[}`, `{"a":"\x"}`, `{"a" : [ 1 , 2 ] , "b" : { } }`,
}

func TestStrictObjectAgreesWithTheDecoder(t *testing.T) {
	for _, s := range strictObjectSeeds {
		checkStrictObject(t, []byte(s))
	}
}

func FuzzStrictObjectAgreesWithTheDecoder(f *testing.F) {
	for _, s := range strictObjectSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkStrictObject)
}

func checkStrictObject(t *testing.T, body []byte) {
	var got, want map[string]json.RawMessage
	gotErr, wantErr := StrictObject(body, &got), strictObjectByDecoder(body, &want)
	if diff := cmp.Diff(wantErr, gotErr); diff != "" {
		t.Fatalf("StrictObject(%q): error differs from the decoder's (-want +got):\n%s", body, diff)
	}
	if wantErr != nil {
		return
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("StrictObject(%q): members differ from the decoder's (-want +got):\n%s", body, diff)
	}
}

// The members are slices of the body: a plan's config is not copied.
func TestStrictObjectMembersAreSlicesOfTheBody(t *testing.T) {
	body := []byte(`{"config": {"apis": {}}, "prune": true}`)
	var top map[string]json.RawMessage
	if err := StrictObject(body, &top); err != nil {
		t.Fatal(err)
	}
	if string(top["config"]) != `{"apis": {}}` || &top["config"][0] != &body[11] {
		t.Fatalf("config = %q, not the body's bytes", top["config"])
	}
	if cap(top["config"]) != len(top["config"]) {
		t.Fatal("config can be appended to over the rest of the body")
	}
}
