package cli

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadBodyReadsTheWholeAnswer whatever its Content-Length says, and in
// pieces as a connection delivers them.
func TestReadBodyReadsTheWholeAnswer(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("0123456789", 100_000)
	for _, c := range []struct {
		name   string
		length int64
	}{{"exact", int64(len(body))}, {"unknown", -1}, {"too small", 10}, {"too large", int64(len(body)) + 100}, {"beyond the bound", maxPresize + 1}} {
		resp := &http.Response{ContentLength: c.length,
			Body: io.NopCloser(io.MultiReader(iotest.HalfReader(strings.NewReader(body[:1000])), strings.NewReader(body[1000:])))}
		got, err := readBody(resp)
		if err != nil || !bytes.Equal(got, []byte(body)) {
			t.Errorf("%s: read %d bytes, %v; want %d", c.name, len(got), err, len(body))
		}
	}
	resp := &http.Response{ContentLength: 100, Body: io.NopCloser(iotest.ErrReader(io.ErrUnexpectedEOF))}
	if _, err := readBody(resp); err != io.ErrUnexpectedEOF {
		t.Errorf("a failed read: %v", err)
	}
}
