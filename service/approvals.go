package service

import (
	"bytes"

	"github.com/gin-gonic/gin"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/plans"
)

// getPolicies answers GET /v1/config-policies: 401 (middleware), 403, then
// the policies in force.
func (s *Server) getPolicies(c *gin.Context) {
	p, err := s.d.Environments.GetPolicies(c.Request.Context(), actor(c))
	s.answer(c, p, err)
}

// reviewBody is the body of :approve and :reject (§17), closed.
type reviewBody struct {
	Comment *string `json:"comment"`
}

// parseReview reads the body of :approve (optional: empty is {}) or
// :reject (its comment required, 1–1,000 characters): a problem is 400
// malformed_request or unknown_field.
func parseReview(body []byte, reject bool) (plans.Review, error) {
	var b reviewBody
	if len(bytes.TrimSpace(body)) > 0 {
		if err := config.DecodeObject(body, &b); err != nil {
			return plans.Review{}, err
		}
	}
	if b.Comment != nil {
		if err := plans.CheckReviewComment(*b.Comment); err != nil {
			return plans.Review{}, err
		}
	}
	if reject && (b.Comment == nil || *b.Comment == "") {
		return plans.Review{}, &config.Error{Code: config.CodeMalformedRequest, Detail: "a rejection needs a comment of 1 to 1,000 characters",
			Errors: []config.FieldError{{Pointer: "/comment", Code: config.CodeRequired, Detail: "a rejection says why, in 1 to 1,000 characters"}}}
	}
	return plans.Review{Reject: reject, Comment: b.Comment}, nil
}

// reviewPlan answers POST /v1/config-plans/{id}:approve and :reject, in
// order: 401 (middleware), 400, 404, 403, 410, 409 and, to approve, 403
// self_approval_forbidden. An Idempotency-Key is accepted and ignored (a
// review is idempotent by nature), and no rate limit applies.
func (s *Server) reviewPlan(c *gin.Context, id string, reject bool) {
	body, err := s.readBody(c, defaultBodyLimit)
	if err != nil {
		s.fail(c, err)
		return
	}
	r, err := parseReview(body, reject)
	if err != nil {
		s.fail(c, err)
		return
	}
	p, err := s.d.Plans.ReviewPlan(c.Request.Context(), actor(c), id, r)
	s.answer(c, p, err)
}
