package revisions

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestDecodeResourcesReadsWhatEncodeWrote: the resources Encode writes read
// back the same by decodeResources and by encoding/json, specs canonical;
// a revision in jsonb's form is left to encoding/json and made canonical.
func TestDecodeResourcesReadsWhatEncodeWrote(t *testing.T) {
	t.Parallel()
	v0, v7, vNeg := 0, 7, -3
	in := []Resource{
		{Kind: "api", Key: "k <&> \"é\" \u2028 \\", Action: "update", VersionBefore: &v7,
			SpecBefore: json.RawMessage(`{"z": [1, {"b": "<&>", "a": "\u00e9\u2028"}], "a": null}`)},
		{Kind: "connection", Key: "c", Action: "delete", VersionBefore: &v0, SpecBefore: json.RawMessage(`{"x":1}`), ResourceIDBefore: "con_\u00e9"},
		{Kind: "api", Key: "new", Action: "create"},
		{Kind: "api", Key: "neg", Action: "update", VersionBefore: &vNeg, SpecBefore: json.RawMessage(`"s"`)},
	}
	want := []Resource{in[0], in[1], in[2], in[3]}
	want[0].SpecBefore = json.RawMessage(`{"a":null,"z":[1,{"a":"é\u2028","b":"<&>"}]}`)
	want[2].SpecBefore = json.RawMessage("null")
	enc, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := decodeResources(enc)
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeResources(%s) = %+v, %v; want %+v", enc, got, ok, want)
	}
	var stored []storedResource
	if err := json.Unmarshal(enc, &stored); err != nil {
		t.Fatal(err)
	}
	for i, s := range stored {
		s.Resource.ResourceIDBefore = s.ResourceIDBefore
		if !reflect.DeepEqual(s.Resource, want[i]) {
			t.Errorf("encoding/json reads %+v, want %+v", s.Resource, want[i])
		}
	}
	if got, ok := decodeResources([]byte("[]")); !ok || len(got) != 0 || got == nil {
		t.Errorf("decodeResources([]) = %#v, %v", got, ok)
	}

	jsonb := []byte(`[{"key": "a", "kind": "api", "action": "update", "spec_before": {"b": 1, "a": [2, 3]}, "version_before": 2}]`)
	if _, ok := decodeResources(jsonb); ok {
		t.Fatal("decodeResources read jsonb's form")
	}
	rs, err := DecodeResources(jsonb)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(rs[0].SpecBefore); s != `{"a":[2,3],"b":1}` || *rs[0].VersionBefore != 2 {
		t.Errorf("jsonb's form read as %+v, spec %s", rs[0], s)
	}
	deep := strings.Repeat(`{"b": 1, "a": `, 600) + "null" + strings.Repeat("}", 600)
	rs, err = DecodeResources([]byte(`[{"key": "a", "kind": "api", "action": "update", "spec_before": ` + deep + `, "version_before": 2}]`))
	if err != nil {
		t.Fatal(err)
	}
	if s, want := string(rs[0].SpecBefore), strings.Repeat(`{"a":`, 600)+"null"+strings.Repeat(`,"b":1}`, 600); s != want {
		t.Errorf("a spec nested too deep for a scan read as %.80s…", s)
	}
	for _, bad := range []string{`[`, `[{"kind":"a"}]`, `[{"kind":"a","key":"b","action":"c","version_before":01,"spec_before":null}]`,
		`[{"kind":"a","key":"b","action":"c","version_before":1,"spec_before":{"b":1,"a":2}}]`, `[]x`} {
		if _, ok := decodeResources([]byte(bad)); ok {
			t.Errorf("decodeResources(%s) read it", bad)
		}
	}
}

// TestDecodeResourcesOfManyKeepsEachVersionAndName: the versions read (in
// chunks, more than one here) stay each its own, and kinds and actions that
// repeat, escaped or not, or change, read as written.
func TestDecodeResourcesOfManyKeepsEachVersionAndName(t *testing.T) {
	t.Parallel()
	var in []Resource
	for i := range 300 {
		v := i * 3
		r := Resource{Kind: "api", Key: fmt.Sprintf("k-%d", i), Action: "update", VersionBefore: &v, SpecBefore: json.RawMessage(`{"n":1}`)}
		switch i % 7 {
		case 1, 2:
			r.Kind, r.Action = "role \"x\" \u2028", "delete"
		case 3:
			r.Kind, r.Action, r.VersionBefore, r.SpecBefore = "apis", "create", nil, json.RawMessage("null")
		case 4:
			r.Kind = "ap"
		}
		in = append(in, r)
	}
	enc, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := decodeResources(enc)
	if !ok || !reflect.DeepEqual(got, in) {
		t.Fatalf("decodeResources of %d resources: ok %v, not what Encode wrote", len(in), ok)
	}
	*got[0].VersionBefore = -1
	if *got[1].VersionBefore != 3 || *got[299].VersionBefore != 897 {
		t.Errorf("the versions share their storage: %d, %d", *got[1].VersionBefore, *got[299].VersionBefore)
	}
}

// TestEncodeInPiecesIsEncode: the pieces put together are Encode's bytes,
// whatever the piece's size, and their total is its length.
func TestEncodeInPiecesIsEncode(t *testing.T) {
	v := 3
	var rs []Resource
	for i := range 50 {
		rs = append(rs, Resource{Kind: "api", Key: fmt.Sprintf("a-%d", i), Action: "update", VersionBefore: &v,
			SpecBefore: json.RawMessage(fmt.Sprintf(`{"b":"é✓ %d","a":[1,2]}`, i)), ResourceIDBefore: "rs_1"},
			Resource{Kind: "role", Key: fmt.Sprintf("r-%d", i), Action: "create"})
	}
	for _, n := range [][]Resource{nil, rs[:1], rs} {
		want, err := Encode(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, piece := range []int{1, 100, 1000, 1 << 20} {
			var got []byte
			pieces := 0
			size, err := EncodeInPieces(n, piece, func(b []byte) error {
				got = append(got, b...)
				pieces++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) || size != len(want) {
				t.Errorf("%d resources in pieces of %d: %d bytes (size %d), want %s", len(n), piece, len(got), size, want)
			}
			if piece == 100 && len(n) == len(rs) && pieces < len(want)/400 {
				t.Errorf("%d pieces of about 100 bytes for %d bytes", pieces, len(want))
			}
		}
	}
}
