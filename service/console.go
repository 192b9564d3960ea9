package service

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/console"
)

// consolePath reports whether a request path is the console's.
func consolePath(p string) bool { return p == "/console" || strings.HasPrefix(p, "/console/") }

// consoleHeaders sets the security headers every /console/ response has,
// its errors included (SPEC §15).
func consoleHeaders(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("Content-Security-Policy", console.ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", console.ReferrerPolicy)
}

func withConsoleHeaders(c *gin.Context) {
	consoleHeaders(c)
	c.Next()
}

// consoleRedirect sends /console to /console/, where the page's relative
// paths resolve.
func (s *Server) consoleRedirect(c *gin.Context) {
	c.Header("Location", "/console/")
	c.Status(http.StatusMovedPermanently)
	c.Abort()
}

// rootRedirect sends a browser that opens the server's address to the
// console (SPEC §22). A 302, not a 301: what / shows is this server's
// choice, and a browser must not remember it for ever.
func (s *Server) rootRedirect(c *gin.Context) {
	c.Header("Location", "/console/")
	c.Status(http.StatusFound)
	c.Abort()
}

// consolePage answers an asset under /console/assets/, and index.html for
// every other path: the client routes on it, so a deep link or a reload of
// any page of the console works. A missing asset is a 404 problem.
func (s *Server) consolePage(c *gin.Context) {
	p := strings.TrimPrefix(c.Param("path"), "/")
	if name, ok := strings.CutPrefix(p, "assets/"); ok || p == "assets" {
		body, contentType, found := console.Asset(name)
		if !found {
			s.write(c, problemResponse(&config.Error{Code: config.CodeNotFound, Detail: "no such console asset"}, requestID(c)))
			return
		}
		// The asset names carry no version: revalidate on every load, so an
		// upgraded keenauthd never runs an old script.
		c.Header("Cache-Control", "no-cache")
		c.Data(http.StatusOK, contentType, body)
		return
	}
	c.Header("Cache-Control", "no-cache")
	c.Data(http.StatusOK, "text/html; charset=utf-8", console.Index())
}
