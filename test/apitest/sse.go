package apitest

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// SSE is one server-sent event of a stream, or a comment line (Comment set).
type SSE struct {
	ID, Event, Data string
	Comment         string
}

// Stream is an open GET /v1/config-events/stream.
type Stream struct {
	Resp   *http.Response
	Opened time.Time // when its headers arrived
	items  chan SSE
	cancel context.CancelFunc
}

// OpenStream opens the live stream of baseURL with secret, sending
// Last-Event-ID when lastEventID is not empty. The answer's headers are
// awaited for up to 5 s; a non-200 answer is returned with its body unread
// (Stream.Resp). The stream is closed when t ends.
func OpenStream(t testing.TB, baseURL, secret, lastEventID string) *Stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", baseURL+"/v1/config-events/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Accept", "text/event-stream")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	type result struct {
		resp *http.Response
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		got <- result{resp, err}
	}()
	var r result
	select {
	case r = <-got:
	case <-time.After(5 * time.Second):
		cancel()
		t.Fatal("the stream's headers did not come within 5 s")
	}
	if r.err != nil {
		cancel()
		t.Fatalf("open stream: %v", r.err)
	}
	s := &Stream{Resp: r.resp, Opened: time.Now(), items: make(chan SSE, 1024), cancel: cancel}
	t.Cleanup(s.Close)
	if r.resp.StatusCode == http.StatusOK {
		go s.read(r.resp.Body)
	}
	return s
}

// Close ends the stream.
func (s *Stream) Close() {
	s.cancel()
	_ = s.Resp.Body.Close()
}

func (s *Stream) read(body io.Reader) {
	defer close(s.items)
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var ev SSE
	for sc.Scan() {
		line := sc.Text()
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch {
		case line == "":
			if ev != (SSE{}) {
				s.items <- ev
			}
			ev = SSE{}
		case field == "":
			s.items <- SSE{Comment: value}
		case field == "id":
			ev.ID = value
		case field == "event":
			ev.Event = value
		case field == "data":
			ev.Data = value
		}
	}
}

// Next returns the next item of the stream (an event or a comment), false
// when none comes within wait or the stream ended.
func (s *Stream) Next(wait time.Duration) (SSE, bool) {
	select {
	case it, ok := <-s.items:
		return it, ok
	case <-time.After(wait):
		return SSE{}, false
	}
}

// NextEvent returns the next event, skipping comments, and fails t unless
// one comes within wait.
func (s *Stream) NextEvent(t testing.TB, wait time.Duration) SSE {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		it, ok := s.Next(time.Until(deadline))
		if !ok {
			t.Fatalf("no event within %s", wait)
		}
		if it.Comment == "" {
			return it
		}
	}
}

// NoEvent fails t if an event comes within wait.
func (s *Stream) NoEvent(t testing.TB, wait time.Duration) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		it, ok := s.Next(time.Until(deadline))
		if !ok {
			return
		}
		if it.Comment == "" {
			t.Fatalf("unexpected event %+v", it)
		}
	}
}
