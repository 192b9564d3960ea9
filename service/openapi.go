package service

import (
	_ "embed"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/keenauth/configplans/config"
)

// OpenAPI is the OpenAPI 3.1 document of the API.
//
//go:embed openapi.json
var OpenAPI []byte

func (s *Server) openapi(c *gin.Context) {
	c.Data(http.StatusOK, "application/json", OpenAPI)
}

// configSchema serves the JSON Schema of a plan request body (§14), which
// editors use to complete and check documents.
func (s *Server) configSchema(c *gin.Context) {
	c.Data(http.StatusOK, "application/schema+json", config.ConfigSchema())
}
