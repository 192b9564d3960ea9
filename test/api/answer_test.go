package api_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/keenauth/configplans/test/apitest"
)

// flushRecorder records whether the access log line of its request had
// been written when the answer was first flushed to the client.
type flushRecorder struct {
	*httptest.ResponseRecorder
	logs             *apitest.SyncBuffer
	flushes          int
	loggedAtFlush    bool
	lengthAtFlush    string
	bodyBytesAtFlush int
}

func (f *flushRecorder) Flush() {
	if f.flushes == 0 {
		id := f.Header().Get("Request-Id")
		f.loggedAtFlush = id == "" || strings.Contains(f.logs.String(), `"request_id":"`+id+`"`)
		f.lengthAtFlush = f.Header().Get("Content-Length")
		f.bodyBytesAtFlush = f.Body.Len()
	}
	f.flushes++
	f.ResponseRecorder.Flush()
}

// TestAnswerLeavesWithItsLengthBeforeTheAccessLogLine: an answer — a
// replay, a fresh success, a problem — is flushed to the client whole,
// with its Content-Length, before the request's access log line is
// written; the line is written all the same.
func TestAnswerLeavesWithItsLengthBeforeTheAccessLogLine(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	p := e.Plan(idemDoc("orders"), false)
	path := idemApplyPath(p["id"].(string))
	send := func(path, key string) *flushRecorder {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+e.Secret)
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		rec := &flushRecorder{ResponseRecorder: httptest.NewRecorder(), logs: e.Logs}
		e.Handler.ServeHTTP(rec, req)
		return rec
	}
	for _, tc := range []struct {
		name       string
		path, key  string
		status     int
		replayed   bool
		wantInBody string
	}{
		{"fresh apply", path, "k1", http.StatusOK, false, `"status":"applied"`},
		{"replay", path, "k1", http.StatusOK, true, `"status":"applied"`},
		{"problem", idemApplyPath("cfgp_00000000000000000000000000"), "", http.StatusNotFound, false, `"code":"not_found"`},
	} {
		rec := send(tc.path, tc.key)
		if rec.Code != tc.status || (rec.Header().Get("Idempotent-Replayed") == "true") != tc.replayed ||
			!strings.Contains(rec.Body.String(), tc.wantInBody) {
			t.Fatalf("%s: %d replayed=%q %s", tc.name, rec.Code, rec.Header().Get("Idempotent-Replayed"), rec.Body)
		}
		if rec.flushes == 0 {
			t.Fatalf("%s: the answer was not flushed by the handler", tc.name)
		}
		if rec.loggedAtFlush {
			t.Errorf("%s: the access log line was written before the answer left", tc.name)
		}
		if want := strconv.Itoa(rec.Body.Len()); rec.lengthAtFlush != want || rec.bodyBytesAtFlush != rec.Body.Len() {
			t.Errorf("%s: at the flush Content-Length %q and %d body bytes, want %s and the whole body", tc.name,
				rec.lengthAtFlush, rec.bodyBytesAtFlush, want)
		}
		if id := rec.Header().Get("Request-Id"); !strings.Contains(e.Logs.String(), `"request_id":"`+id+`"`) {
			t.Errorf("%s: no access log line for %s", tc.name, id)
		}
	}
}

// TestLargeAnswerIsNotChunked: over a real connection an answer larger
// than net/http's buffer carries its Content-Length instead of being sent
// chunked.
func TestLargeAnswerIsNotChunked(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	apis := map[string]any{}
	for i := range 10 {
		name := "api-" + strconv.Itoa(i)
		apis[name] = idemDoc(name)["apis"].(map[string]any)[name]
	}
	p := e.Plan(map[string]any{"apis": apis}, false)
	srv := httptest.NewServer(e.Handler)
	t.Cleanup(srv.Close)
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/config-plans/"+p["id"].(string), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.Secret)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the plan: %d %v %s", resp.StatusCode, err, body)
	}
	if len(body) <= 2<<10 {
		t.Fatalf("the plan is %d bytes: too small to test net/http's buffer", len(body))
	}
	if len(resp.TransferEncoding) != 0 || resp.ContentLength != int64(len(body)) {
		t.Errorf("Transfer-Encoding %q, Content-Length %d for %d bytes", resp.TransferEncoding, resp.ContentLength, len(body))
	}
}
