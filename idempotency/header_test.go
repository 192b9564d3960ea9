package idempotency

import (
	"encoding/json"
	"maps"
	"testing"
)

var headerInputs = []string{
	`{}`, ` { } `, `{"Content-Type":"application/json; charset=utf-8"}`,
	`{"Content-Type":"application/json; charset=utf-8","Location":"/v1/config-plans/cfgp_01m4qpqtywfs7930tb6kqn5rc5"}`,
	"{ \"A\" : \"1\" ,\n\t\"B\":\"2\" }", `{"A":"1","A":"2"}`, `{"A":"\u0026\n"}`, `{"\u00e9":"x"}`, `{"é":"ü"}`,
	`null`, ``, `{`, `}`, `{"A"}`, `{"A":}`, `{"A":"1",}`, `{"A":"1"} x`, `{"A":1}`, `{"A":null}`, `{"A":["1"]}`,
	`["A"]`, `"A"`, `{"A":"1"`, `{"A" "1"}`, `{"A":"1" "B":"2"}`, "{\"A\":\"\xff\"}", `{"A":"\x"}`, `{,}`,
}

// TestDecodeHeaderAgreesWithEncodingJSON: the scan and the fallback answer
// what json.Unmarshal answers, for what Complete stores and for what it
// never stores.
func TestDecodeHeaderAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, in := range headerInputs {
		checkHeaderDecode(t, []byte(in))
	}
	// What Complete writes is read by the scan, not the fallback.
	stored, _ := json.Marshal(map[string]string{"Content-Type": "application/problem+json", "Location": "/v1/config-plans/cfgp_x"})
	if _, ok := scanHeader(stored); !ok {
		t.Errorf("the scan leaves %s to encoding/json", stored)
	}
}

func FuzzDecodeHeaderAgreesWithEncodingJSON(f *testing.F) {
	for _, in := range headerInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkHeaderDecode(t, b) })
}

func checkHeaderDecode(t *testing.T, b []byte) {
	t.Helper()
	got, gerr := decodeHeader(b)
	var want map[string]string
	werr := json.Unmarshal(b, &want)
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%q: error %v, encoding/json %v", b, gerr, werr)
	}
	if gerr == nil && (!maps.Equal(got, want) || (got == nil) != (want == nil)) {
		t.Fatalf("%q: %q, encoding/json %q", b, got, want)
	}
}
