package plans

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/keenauth/configplans/config"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// decodeValue decodes JSON with UseNumber, failing the test on bytes that
// are not one JSON value.
func decodeValue(t *testing.T, b []byte) any {
	t.Helper()
	if !json.Valid(b) {
		t.Fatalf("not JSON: %s", b)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRevisionDiffAppendJSONIsTheEncodingJSONAnswer: the appended answer
// of a revision diff is the same JSON value as encoding/json's, with specs
// holding <, >, &, other characters than ASCII, escapes, U+2028 and
// resources created, deleted and changed since.
func TestRevisionDiffAppendJSONIsTheEncodingJSONAnswer(t *testing.T) {
	t.Parallel()
	specs := []string{
		`{"display_name":"<b>R&D</b> \"quoted\" \\ back","identifier":"https://api.example/?a=1&b=<2>","scopes":[{"description":"café ☕ 😀 \u2028 \t tab","value":"read"}]}`,
		`{"display_name":"R&D","identifier":"https://api.example/?a=1&b=<3>","scopes":[{"description":"\u0001\u001f\u007f","value":"read"},{"value":"write"}]}`,
		`{"callback_urls":["https://a.example/cb?x=<y>&z","https://b.example"],"name":"app \u00e9"}`,
		`{"callback_urls":["https://b.example"],"name":"app é","logo":null}`,
	}
	one, two := 1, 2
	d := &RevisionDiff{Object: "config_revision_diff", RevisionID: "cfgr_<&>\"é", Resources: []RevisionDiffResource{}}
	var arena []byte
	add := func(kind, key string, vb, vn *int, before, now string) {
		r := RevisionDiffResource{Kind: kind, Key: key, VersionBefore: vb, VersionNow: vn}
		var err error
		if before != "" {
			if arena, r.SpecBefore, err = revisionSpec(arena, []byte(before)); err != nil {
				t.Fatal(err)
			}
		}
		if now != "" {
			if arena, r.SpecNow, err = revisionSpec(arena, []byte(now)); err != nil {
				t.Fatal(err)
			}
		}
		r.Diff = config.DiffCanonical(r.SpecNow, r.SpecBefore)
		d.Resources = append(d.Resources, r)
	}
	add("api", "changed <&>", &one, &two, specs[0], specs[1])
	add("api", "same", &one, &one, specs[0], specs[0])
	add("application", "deleted since", &one, nil, specs[2], "")
	add("application", "created by the apply \u2028", nil, &two, "", specs[3])
	add("application", "changed", &two, &two, specs[3], specs[2])
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 200 {
		b := genApplication(rng)
		a := mutate(rng, b)
		add("application", fmt.Sprintf("generated-%d", i), &one, &two, string(config.CanonicalJSON(b)), string(spaced(config.CanonicalJSON(a))))
	}
	want, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	got := d.AppendJSON([]byte("x"))[1:]
	if !reflect.DeepEqual(decodeValue(t, got), decodeValue(t, want)) {
		t.Errorf("AppendJSON\n%s\nencoding/json\n%s", got, want)
	}
	if !bytes.Contains(got, []byte(`"<b>R&D</b> \"quoted\" \\ back"`)) || !bytes.Contains(got, []byte(`\u2028`)) {
		t.Errorf("specs not copied as they are: %s", got)
	}
	empty := &RevisionDiff{Object: "config_revision_diff", RevisionID: "cfgr_1"}
	want, _ = json.Marshal(empty)
	if got := empty.AppendJSON(nil); !bytes.Equal(got, want) {
		t.Errorf("AppendJSON of no resources = %s, encoding/json %s", got, want)
	}
	// Streamed, the answer is the same bytes: for no resources, for these,
	// and for many more than one buffer of WriteJSON holds.
	many := &RevisionDiff{Object: d.Object, RevisionID: d.RevisionID}
	for range 40 {
		many.Resources = append(many.Resources, d.Resources...)
	}
	for _, x := range []*RevisionDiff{empty, {Object: "config_revision_diff", RevisionID: "cfgr_2", Resources: []RevisionDiffResource{}}, d, many} {
		var w writes
		if err := x.WriteJSON(&w); err != nil {
			t.Fatal(err)
		}
		if want := x.AppendJSON(nil); !bytes.Equal(w.Bytes(), want) {
			t.Errorf("WriteJSON of %d resources wrote %d bytes unlike AppendJSON's %d", len(x.Resources), w.Len(), len(want))
		}
		if len(x.Resources) == len(many.Resources) && w.n < 2 {
			t.Errorf("WriteJSON of %d bytes wrote them in %d pieces, want several", w.Len(), w.n)
		}
	}
}

// writes is a buffer that counts the writes to it.
type writes struct {
	bytes.Buffer
	n int
}

func (w *writes) Write(p []byte) (int, error) {
	w.n++
	return w.Buffer.Write(p)
}

// TestAppendDiffOpIsMarshalJSON: every shape of operation appends the JSON
// value its MarshalJSON writes.
func TestAppendDiffOpIsMarshalJSON(t *testing.T) {
	t.Parallel()
	for _, op := range []config.DiffOp{
		{Op: "add", Path: "/a~1b", Value: json.RawMessage(`"<&>"`)},
		{Op: "add", Path: "", Old: json.RawMessage(`1`), Value: json.RawMessage(`{"x":[1,"é"]}`)},
		{Op: "add", Path: "/n"},
		{Op: "remove", Path: "/x/0", Old: json.RawMessage(`null`)},
		{Op: "remove", Path: "/x/0"},
		{Op: "replace", Path: "/\u2028", Old: json.RawMessage(`"a"`), Value: json.RawMessage(`null`)},
		{Op: "replace", Path: "/v", Value: json.RawMessage(`2`)},
		{Op: "replace", Path: "/v", Old: json.RawMessage(`"x"`)},
	} {
		want, err := op.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		got := config.AppendDiffOp(nil, op)
		if !reflect.DeepEqual(decodeValue(t, got), decodeValue(t, want)) {
			t.Errorf("appendDiffOp = %s, MarshalJSON %s", got, want)
		}
	}
}

// TestRevisionSpecIsCanonicalForDiff: the specs revisionSpec appends to one
// buffer are each what canonicalForDiff makes of it, and stay so while the
// buffer grows past its capacity; bytes that are not JSON are an error.
func TestRevisionSpecIsCanonicalForDiff(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 600) + strings.Repeat("]", 600)
	inputs := []string{`{"b": 1, "a": [2, {"d": "x", "c": null}]}`, `{"a":1}`, "", "  ", "null", " null ", `"s"`, "[]", deep,
		`{"z": "é \u00e9 <&>", "y": "\u2028"}`, `{"a": 1, "a": 2}`, `{"a":1} x`}
	rng := rand.New(rand.NewPCG(8, 9))
	for range 300 {
		inputs = append(inputs, string(spaced(config.CanonicalJSON(genApplication(rng)))))
	}
	arena := make([]byte, 0, 16)
	var got []json.RawMessage
	for _, in := range inputs {
		var spec json.RawMessage
		var err error
		if arena, spec, err = revisionSpec(arena, []byte(in)); err != nil {
			t.Fatalf("revisionSpec(%q): %v", in, err)
		}
		got = append(got, spec)
	}
	for i, in := range inputs {
		want, ok := config.CanonicalForDiff([]byte(in))
		if !ok || !bytes.Equal(got[i], want) || (got[i] == nil) != (want == nil) {
			t.Fatalf("revisionSpec(%q) = %q, canonicalForDiff %q (ok %v)", in, got[i], want, ok)
		}
	}
	for _, bad := range []string{"{", "nope", `[1,`} {
		if _, _, err := revisionSpec(nil, []byte(bad)); err == nil {
			t.Errorf("revisionSpec(%q) took bytes that are not JSON", bad)
		}
	}
}

// TestKindReaderKeepsCopiesOfTheDriversBytes: the resources a kindReader
// keeps are those read, with their specs as revisionSpec makes them, when
// the bytes each was given are overwritten after its call (the driver's
// read buffer is), across chunks of its arena and specs larger than one.
func TestKindReaderKeepsCopiesOfTheDriversBytes(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(10, 11))
	inputs := []string{`{"b": 1, "a": [2, {"d": "x", "c": null}]}`, `{"a":1}`, "", "null", " null ", `"s"`, "[]",
		strings.Repeat("[", 600) + strings.Repeat("]", 600), `{"big": "` + strings.Repeat("x", arenaChunk+10) + `"}`}
	for range 2000 {
		inputs = append(inputs, string(spaced(config.CanonicalJSON(genApplication(rng)))))
	}
	var kr kindReader
	buf := make([]byte, 0, arenaChunk*2) // one buffer for every call, as the driver's
	for i, in := range inputs {
		key := append(buf[:0], fmt.Sprintf("key-%04d", i)...)
		raw := append(key[len(key):], in...)
		if err := kr.add(key, i, raw); err != nil {
			t.Fatalf("add(%q): %v", in, err)
		}
		for j := range len(key) + len(raw) {
			buf[:cap(buf)][j] = '#'
		}
	}
	rows := kr.resources("api")
	if len(rows) != len(inputs) {
		t.Fatalf("%d resources, want %d", len(rows), len(inputs))
	}
	for i, in := range inputs {
		_, want, err := revisionSpec(nil, []byte(in))
		if err != nil {
			t.Fatal(err)
		}
		r := rows[i]
		if r.Kind != "api" || r.Key != fmt.Sprintf("key-%04d", i) || r.Version != i ||
			!bytes.Equal(r.Spec, want) || (r.Spec == nil) != (want == nil) {
			t.Fatalf("resource %d: %s %s %d %q, want key-%04d %d %q", i, r.Kind, r.Key, r.Version, r.Spec, i, i, want)
		}
	}
	if err := kr.add([]byte("bad"), 1, []byte("{")); err == nil {
		t.Error("add took a spec that is not JSON")
	}
}
