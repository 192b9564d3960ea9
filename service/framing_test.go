package service

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFramingFollowsPipelinedRequests feeds a connection's bytes in pieces
// of every size: each request's frame is found, bodies (by length or
// chunked, with extensions and trailers) are skipped, and leading blank
// lines are not counted.
func TestFramingFollowsPipelinedRequests(t *testing.T) {
	t.Parallel()
	get := "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
	post := "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 25\r\n\r\n" + "GET /c HTTP/1.1\r\nHost: x\r\n" // a body that reads like a request
	chunked := "POST /d HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=\"a\"\r\nhello\r\n7\r\nContent\r\n0\r\nX-Trailer: 1\r\n\r\n"
	both := "POST /e HTTP/1.1\r\nHost: x\r\ncontent-length: 3\r\nTRANSFER-ENCODING: chunked\r\n\r\n0\r\n\r\n"
	old := "POST /f HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\nhi"
	stream := get + post + "\r\n" + chunked + both + old + get
	want := []frame{
		{headerBytes: int64(len(get))},
		{headerBytes: int64(strings.Index(post, "\r\n\r\n") + 4), hasLength: true},
		{headerBytes: int64(strings.Index(chunked, "\r\n\r\n") + 4), chunked: true},
		{headerBytes: int64(strings.Index(both, "\r\n\r\n") + 4), chunked: true, hasLength: true},
		{headerBytes: int64(strings.Index(old, "\r\n\r\n") + 4), chunked: true, hasLength: true},
		{headerBytes: int64(len(get))},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for size := 1; size <= len(stream); size++ {
		var f framing
		for rest := stream; rest != ""; {
			n := min(len(rest), 1+rng.IntN(size))
			f.feed([]byte(rest[:n]))
			rest = rest[n:]
		}
		if d := cmp.Diff(want, f.done, cmp.AllowUnexported(frame{})); d != "" || f.state != stHeaders {
			t.Fatalf("pieces of up to %d bytes: state %d, frames (-want +got):\n%s", size, f.state, d)
		}
	}
}

// TestFramingStopsWhereItCannotFollow: a stream it cannot read makes no
// more frames (checkFraming then refuses the request), and a header line
// of any length is counted without being kept.
func TestFramingStopsWhereItCannotFollow(t *testing.T) {
	t.Parallel()
	for _, stream := range []string{
		"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\nGET / HTTP/1.1\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nGET / HTTP/1.1\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n\r\nGET / HTTP/1.1\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n",
	} {
		var f framing
		f.feed([]byte(stream))
		if f.state != stLost || len(f.done) > 1 {
			t.Errorf("%q: state %d, %d frames", stream, f.state, len(f.done))
		}
	}
	var f framing
	f.feed([]byte("GET / HTTP/1.1\r\nX-Long: "))
	for range 100 {
		f.feed([]byte(strings.Repeat("b", 10000)))
	}
	if len(f.line) > lineKeep || f.size < 1_000_000 {
		t.Errorf("a 1 MB line: %d bytes kept, %d counted", len(f.line), f.size)
	}
}
