// Package console holds the support console: a single-page web client of
// the public /v1 API, written as plain ES modules and one style sheet with
// no build step, embedded in the binary so that keenauthd serves it with no
// internet and no extra file.
package console

import (
	"embed"
	"io/fs"
	"mime"
	"path"
)

//go:embed assets
var assets embed.FS

// Security headers of every /console/ response (SPEC §15): the page runs
// only its own scripts and styles, talks only to its own origin, and cannot
// be framed.
const (
	ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
	ReferrerPolicy = "no-referrer"
)

// Index returns the page every console URL that is not an asset answers:
// the client routes on the path (deep links, reload, back and forward).
func Index() []byte {
	b, err := assets.ReadFile("assets/index.html")
	if err != nil {
		panic("console: index.html is not embedded: " + err.Error())
	}
	return b
}

// Asset returns the embedded file name (a path below /console/assets/) and
// its media type; ok is false when there is none.
func Asset(name string) (body []byte, contentType string, ok bool) {
	if name == "" || name == "index.html" || !fs.ValidPath(name) {
		return nil, "", false
	}
	b, err := assets.ReadFile(path.Join("assets", name))
	if err != nil {
		return nil, "", false
	}
	switch path.Ext(name) {
	case ".js":
		contentType = "text/javascript; charset=utf-8"
	case ".css":
		contentType = "text/css; charset=utf-8"
	case ".svg":
		contentType = "image/svg+xml"
	default:
		contentType = mime.TypeByExtension(path.Ext(name))
		if contentType == "" {
			contentType = "application/octet-stream"
		}
	}
	return b, contentType, true
}
