package service

import (
	"bytes"
	"strconv"
)

// framing follows the HTTP/1.1 request stream of one connection as it is
// read (RFC 9112 §6): the request line and headers of each request, then
// its body by Content-Length or chunked, then the next request. For each
// request it records a frame: how many bytes its line and headers took and
// which framing headers it had. It keeps at most lineKeep bytes of a line,
// so following a connection costs a few hundred bytes whatever is sent.
//
// When the stream cannot be followed (a Content-Length that is not a
// number, a chunk size that is not hexadecimal) it stops: net/http refuses
// such a request itself, and a request that net/http accepted but this
// reader could not follow is refused by checkFraming.
type framing struct {
	state     int
	remaining int64 // body or chunk bytes left

	line    []byte // the first lineKeep bytes of the current line
	tail    []byte // its last tailKeep bytes
	lineLen int

	// the request being read
	started   bool // its request line was seen
	http10    bool // ... and it is of HTTP/1.0
	size      int64
	hasLength bool
	length    int64
	chunked   bool

	done []frame // requests read and not yet handled
}

// frame is what checkFraming needs of one request.
type frame struct {
	headerBytes int64
	chunked     bool // Transfer-Encoding was present
	hasLength   bool // Content-Length was present
}

const (
	stHeaders = iota
	stBody
	stChunkSize
	stChunkData
	stChunkEnd // the CRLF after a chunk's data
	stTrailers
	stLost
)

// lineKeep is how much of a line is kept: enough for a Content-Length of
// 19 digits behind generous white space. The version that ends a request
// line is read from the line's tail.
const lineKeep = 128

// tailKeep is enough for " HTTP/1.0\r\n".
const tailKeep = 12

// maxDone bounds the frames waiting for their handler: net/http handles a
// connection's requests one at a time, so only pipelined requests wait.
const maxDone = 64

func (f *framing) feed(p []byte) {
	for len(p) > 0 {
		switch f.state {
		case stLost:
			return
		case stBody, stChunkData:
			n := min(int64(len(p)), f.remaining)
			f.remaining -= n
			p = p[n:]
			if f.remaining == 0 {
				if f.state == stBody {
					f.state = stHeaders
				} else {
					f.state = stChunkEnd
				}
			}
		default:
			i := bytes.IndexByte(p, '\n')
			chunk := p
			if i >= 0 {
				chunk = p[:i+1]
			}
			p = p[len(chunk):]
			if f.state == stHeaders {
				f.size += int64(len(chunk))
				f.tail = append(f.tail, chunk[max(0, len(chunk)-tailKeep):]...)
				if len(f.tail) > tailKeep {
					f.tail = append(f.tail[:0], f.tail[len(f.tail)-tailKeep:]...)
				}
			}
			if keep := lineKeep - len(f.line); keep > 0 {
				f.line = append(f.line, chunk[:min(keep, len(chunk))]...)
			}
			f.lineLen += len(chunk)
			if i >= 0 {
				f.endLine()
			}
		}
	}
}

// endLine handles a whole line (f.line holds its start, f.lineLen its
// length, the line feed included).
func (f *framing) endLine() {
	line := bytes.TrimRight(f.line, "\r\n")
	whole := f.lineLen <= lineKeep
	tail := bytes.TrimRight(f.tail, "\r\n")
	defer func() { f.line, f.tail, f.lineLen = f.line[:0], f.tail[:0], 0 }()
	switch f.state {
	case stHeaders:
		switch {
		case !f.started && len(line) == 0:
			// A blank line before a request (net/http tolerates them
			// after a POST): not part of the request.
			f.size = 0
		case !f.started:
			f.started = true
			f.http10 = bytes.HasSuffix(tail, []byte(" HTTP/1.0"))
		case len(line) == 0:
			f.endHeaders()
		default:
			f.header(line, whole)
		}
	case stChunkSize:
		n, ok := chunkSize(line)
		switch {
		case !ok:
			f.state = stLost
		case n == 0:
			f.state = stTrailers
		default:
			f.state, f.remaining = stChunkData, n
		}
	case stChunkEnd:
		if len(line) != 0 {
			f.state = stLost
			return
		}
		f.state = stChunkSize
	case stTrailers:
		if len(line) == 0 {
			f.state = stHeaders
		}
	}
}

func (f *framing) header(line []byte, whole bool) {
	name, value, ok := bytes.Cut(line, []byte(":"))
	if !ok {
		return // net/http refuses it
	}
	switch {
	case bytes.EqualFold(name, []byte("Transfer-Encoding")):
		f.chunked = true
	case bytes.EqualFold(name, []byte("Content-Length")):
		n, err := strconv.ParseInt(string(bytes.Trim(value, " \t")), 10, 64)
		if !whole || err != nil || n < 0 || (f.hasLength && n != f.length) {
			f.state = stLost
			return
		}
		f.hasLength, f.length = true, n
	}
}

func (f *framing) endHeaders() {
	if len(f.done) == maxDone {
		f.state = stLost
		return
	}
	f.done = append(f.done, frame{headerBytes: f.size, chunked: f.chunked, hasLength: f.hasLength})
	chunked := f.chunked && !f.http10 // HTTP/1.0 has no chunked bodies: net/http reads the length
	length := f.length
	f.started, f.http10, f.size, f.hasLength, f.length, f.chunked = false, false, 0, false, 0, false
	switch {
	case chunked:
		f.state = stChunkSize
	case length > 0:
		f.state, f.remaining = stBody, length
	default:
		f.state = stHeaders
	}
}

// chunkSize reads the hexadecimal size that starts a chunk's line, before
// its extensions.
func chunkSize(line []byte) (int64, bool) {
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	line = bytes.TrimRight(line, " \t")
	if len(line) == 0 || len(line) > 16 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(line), 16, 63)
	return int64(n), err == nil
}
