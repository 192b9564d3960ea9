package service

import (
	"net/http"
	"testing"
)

type appended struct{ Field string }

func (appended) AppendJSON(b []byte) []byte { return append(b, `{"appended":true}`...) }

// TestJSONResponseTakesTheJSONAValueAppends: a value that appends its own
// JSON is answered with it; any other is encoded by encoding/json.
func TestJSONResponseTakesTheJSONAValueAppends(t *testing.T) {
	t.Parallel()
	r := jsonResponse(http.StatusOK, appended{Field: "x"})
	if string(r.body) != `{"appended":true}` || r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Errorf("appended answer: %d %v %s", r.status, r.header, r.body)
	}
	r = jsonResponse(http.StatusCreated, struct{ Field string }{"x"})
	if string(r.body) != `{"Field":"x"}` || r.status != http.StatusCreated {
		t.Errorf("encoded answer: %d %s", r.status, r.body)
	}
}
