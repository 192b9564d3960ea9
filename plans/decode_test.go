package plans

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// unmarshalRecords is what decodeChangeRecords is held to: encoding/json,
// then the raw values compacted.
func unmarshalRecords(src []byte) ([]changeRecord, error) {
	var recs []changeRecord
	if err := json.Unmarshal(src, &recs); err != nil {
		return nil, err
	}
	for i := range recs {
		c := &recs[i].Change
		c.Spec, c.ResourceID = compactRaw(c.Spec), compactRaw(c.ResourceID)
		for j := range c.Diff {
			c.Diff[j].Old, c.Diff[j].Value = compactRaw(c.Diff[j].Old), compactRaw(c.Diff[j].Value)
		}
	}
	return recs, nil
}

// checkDecodeRecords holds decodeChangeRecords to encoding/json on src.
func checkDecodeRecords(t *testing.T, src []byte) bool {
	t.Helper()
	want, wantErr := unmarshalRecords(src)
	got, err := decodeChangeRecords(src)
	if (err != nil) != (wantErr != nil) {
		t.Errorf("decodeChangeRecords(%q): error %v, encoding/json's %v", src, err, wantErr)
		return false
	}
	if err != nil {
		if err.Error() != wantErr.Error() {
			t.Errorf("decodeChangeRecords(%q): error %v, encoding/json's %v", src, err, wantErr)
			return false
		}
		return true
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decodeChangeRecords(%q)\ngot  %#v\nwant %#v", src, got, want)
		return false
	}
	return true
}

func TestDecodeChangeRecords(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		`null`, `[]`, ` [ ] `, `[null]`, `[{}]`, `[{},null,{}]`,
		`[{"kind":"api","key":"a","action":"create","base_version":null,"spec":{"a":1},"diff":[{"op":"add","path":"","value":{"a":1}}],"requires_secret":false}]`,
		`[{"kind":"connection","key":"c","action":"update","base_version":3,"spec":null,"diff":[],"requires_secret":true,"secret_ref":"s","resource_id":null,"writes_material":true,"keeps_material":true}]`,
		`[ { "kind" : "api" , "key" : "a" , "spec" : {"a":1} , "diff" : null } ]`,
		`[{"kind":null,"key":null,"action":null,"requires_secret":null,"writes_material":null,"diff":[null,{"op":null,"old":null,"value":null}]}]`,
		`[{"key":"\u00e9\ud83d\ude00 \"q\" \\ \/","spec":"\ud800 lone"}]`, "[{\"key\":\"bad \xff utf8\"}]", "[{\"spec\":\"bad \xff utf8\"}]",
		`[{"spec":[1,-2.5e+3,0,true,false,null,"s",{"":{}},[]]}]`, `[{"base_version":-7}]`,
		// Left to encoding/json: each gives its value or its error.
		`[{"Kind":"api"}]`, `[{"KIND":"api","kind":"role"}]`, `[{"kind":"api","kind":"role"}]`, `[{"other":1,"kind":"api"}]`,
		`[{"k\u0069nd":"api"}]`, `[{"spec":{ "a" : 1 }}]`, `[{"spec":[1, 2]}]`, `[{"diff":[{"old":{"a": [1]}}]}]`,
		`[{"base_version":1.0}]`, `[{"base_version":1e2}]`, `[{"base_version":99999999999999999999}]`, `[{"base_version":"1"}]`,
		`[{"key":1}]`, `[{"requires_secret":"true"}]`, `[{"diff":{}}]`, `[{"diff":[1]}]`, `[1]`, `{}`, `"x"`,
		``, `[`, `[{`, `[{"kind"`, `[{"kind":`, `[{"kind":"api"`, `[{"kind":"api",}]`, `[{},]`, `[{}] x`, `[{}]]`,
		`[{"spec":01}]`, `[{"spec":-}]`, `[{"spec":1.}]`, `[{"spec":1e}]`, `[{"spec":tru}]`, `[{"spec":nul}]`, `[{"spec":"\x"}]`,
		`[{"spec":"\u12"}]`, "[{\"spec\":\"a\x01\"}]", "[{\"key\":\"a\x01\"}]", `[{"spec":{"a"}}]`, `[{"spec":{1:2}}]`, `[{"spec":[1 2]}]`,
		"[{\"spec\":1}]\x00",
	} {
		checkDecodeRecords(t, []byte(src))
	}
	// Strings read eight bytes at a time: a quote, an escape or a control
	// character at every offset of a word.
	for n := range 20 {
		for _, special := range []string{`\"`, `\\`, `\n`, `\u00e9`, "\u00e9", "\x01", "\x1f", `"`, "\xff", "\u2028"} {
			text := strings.Repeat("a", n) + special + strings.Repeat("b", 17-n%5)
			checkDecodeRecords(t, []byte(`[{"key":"`+text+`","spec":{"`+text+`":"`+text+`"}}]`))
		}
	}
}

// A creation's diff holds its spec again, which is then not checked a
// second time: the same bytes must still be the same value, and other
// bytes (the spec's as a prefix) read as they always were.
func TestDecodeChangeRecordsOfACreationsDiff(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		spec, value string
		valid       bool // read here, not left to encoding/json
	}{
		{`{"a":[1,{"b":"c"}]}`, `{"a":[1,{"b":"c"}]}`, true}, {`[1,2]`, `[1,2]`, true}, {`{}`, `{}`, true},
		// The spec's bytes followed by more: another value, or none.
		{`{"a":1}`, `{"a":1}x`, false}, {`{"a":1}`, `{"a":1}}`, false}, {`{"a":1}`, `{"a":1},{"b":2}`, false}, {`[1]`, `[1]]`, false},
		// A number, a string or a literal is read again by its scan: "1"
		// is a prefix of "12".
		{`1`, `12`, true}, {`1`, `1.5`, true}, {`1`, `1e3`, true}, {`"s"`, `"s"`, true}, {`true`, `true`, true}, {`null`, `null`, true},
		// Not the spec's bytes.
		{`{"a":1}`, `{"a":2}`, true}, {`{"a":1}`, `{"a":1 }`, false}, {`{"a":1}`, ` {"a":1}`, true},
	} {
		for _, src := range []string{
			`[{"kind":"api","spec":` + c.spec + `,"diff":[{"op":"add","path":"","value":` + c.value + `}]}]`,
			`[{"kind":"api","diff":[{"op":"add","path":"","value":` + c.value + `}],"spec":` + c.spec + `}]`,
			`[{"spec":` + c.spec + `},{"diff":[{"value":` + c.value + `}]}]`,
		} {
			checkDecodeRecords(t, []byte(src))
			d := recordDecoder{src: []byte(src)}
			if _, ok := d.records(); ok != c.valid {
				t.Errorf("%s: read here %v, want %v", src, ok, c.valid)
			}
		}
	}
}

// TestDecodeChangeRecordsOfGeneratedPlans decodes the stored records of
// random plans: as encoding/json does, and without leaving them to it.
// CODEC_SEED=n replays a run.
func TestDecodeChangeRecordsOfGeneratedPlans(t *testing.T) {
	t.Parallel()
	seed := codecSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := range 1000 {
		src := appendChangeRecords(nil, genPlan(rng, nil).Changes)
		if !checkDecodeRecords(t, src) {
			t.Fatalf("CODEC_SEED=%d, case %d", seed, i)
		}
		d := recordDecoder{src: src}
		if _, ok := d.records(); !ok {
			t.Fatalf("CODEC_SEED=%d, case %d: the stored records were left to encoding/json: %s", seed, i, src)
		}
	}
}

func FuzzDecodeChangeRecords(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		f.Add(appendChangeRecords(nil, genPlan(rng, nil).Changes))
	}
	f.Add([]byte(`[{"kind":"api","spec":{ "a" : 1 },"diff":[{"op":"add"}]}]`))
	f.Fuzz(func(t *testing.T, src []byte) {
		checkDecodeRecords(t, src)
	})
}

func BenchmarkDecodeChangeRecords(b *testing.B) {
	src := appendChangeRecords(nil, benchPlan(1000).Changes)
	b.SetBytes(int64(len(src)))
	b.Run("json.Unmarshal", func(b *testing.B) {
		for b.Loop() {
			var recs []changeRecord
			if err := json.Unmarshal(src, &recs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decodeChangeRecords", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeChangeRecords(src); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// checkDecodeVersions holds decodeVersions to json.Unmarshal into a nil
// map[string]int: the same map, or an error for an error.
func checkDecodeVersions(t *testing.T, src []byte) {
	t.Helper()
	var want map[string]int
	wantErr := json.Unmarshal(src, &want)
	got, err := decodeVersions(src)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("decodeVersions(%q): error %v, json.Unmarshal's %v", src, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeVersions(%q) = %v, json.Unmarshal gives %v", src, got, want)
	}
}

// TestDecodeVersionsAsEncodingJSON: stored versions as they are written,
// with spaces (a jsonb column's), null, empty, keys that are left to
// encoding/json (escapes, invalid UTF-8, U+2028) or repeated, values that
// are not small integers, and malformed input.
func TestDecodeVersionsAsEncodingJSON(t *testing.T) {
	for _, src := range versionsCases {
		checkDecodeVersions(t, []byte(src))
	}
	// A plan's own, of 1,000 resources.
	versions := map[string]int{}
	for i := range 1000 {
		versions[fmt.Sprintf("api/r-%05d", i)] = i % 7
	}
	src, err := json.Marshal(versions)
	if err != nil {
		t.Fatal(err)
	}
	checkDecodeVersions(t, src)
	for _, src := range [][]byte{src, []byte(`{"api/a": 1, "role/b": 12}`)} {
		if _, ok := scanVersions(src); !ok {
			t.Errorf("scanVersions left %.40q… to encoding/json", src)
		}
	}
}

func BenchmarkDecodeVersions(b *testing.B) {
	versions := map[string]int{}
	for i := range 1000 {
		versions[fmt.Sprintf("api/r-%05d", i)] = 0
	}
	src, err := json.Marshal(versions)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.Run("json.Unmarshal", func(b *testing.B) {
		for b.Loop() {
			var m map[string]int
			if err := json.Unmarshal(src, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decodeVersions", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeVersions(src); err != nil {
				b.Fatal(err)
			}
		}
	})
}

var versionsCases = []string{
	`{"api/a":1,"role/b":0}`, `{"api/a": 1, "role/b": 12}`, " {\n\"api/a\" :\t3 } ", `null`, ` null `, `{}`, `{ }`,
	`{"api/a":1,"api/a":2}`, `{"api/\u00e9":1}`, `{"api/\"q\"":1}`, "{\"api/\xff\":1}", "{\"api/\u2028\":1}", `{"api/é":1}`,
	`{"api/a":-0}`, `{"api/a":-5}`, `{"api/a":1.0}`, `{"api/a":1e2}`, `{"api/a":123456789012345678}`,
	`{"api/a":1234567890123456789}`, `{"api/a":99999999999999999999}`, `{"api/a":"1"}`, `{"api/a":null}`, `{"api/a":true}`,
	`{"api/a":01}`, `{"api/a":1,}`, `{"api/a" 1}`, `{"api/a":1`, `{"api/a":1}x`, `{"api/a":1}}`, `[]`, `[1]`, `""`, `1`, ``, `{`,
	`{api:1}`, `{"API/A":1}`,
}

func FuzzDecodeVersions(f *testing.F) {
	for _, src := range versionsCases {
		f.Add([]byte(src))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		checkDecodeVersions(t, src)
	})
}
