package service

import (
	_ "embed"
	"net/http"

	"github.com/gin-gonic/gin"
)

// OpenAPI is the OpenAPI 3.1 document of the API.
//
//go:embed openapi.json
var OpenAPI []byte

func (s *Server) openapi(c *gin.Context) {
	c.Data(http.StatusOK, "application/json", OpenAPI)
}
