package service

import "github.com/gin-gonic/gin"

// getPolicies answers GET /v1/config-policies: 401 (middleware), 403, then
// the policies in force.
func (s *Server) getPolicies(c *gin.Context) {
	p, err := s.d.Plans.GetPolicies(c.Request.Context(), actor(c))
	s.answer(c, p, err)
}
