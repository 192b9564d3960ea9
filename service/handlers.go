package service

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/idempotency"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/revisions"
)

func (s *Server) exportConfig(c *gin.Context) {
	param, present := c.GetQuery("types")
	kinds, err := plans.ParseTypes(param, present)
	if err != nil {
		s.fail(c, err)
		return
	}
	ex, err := s.d.Reads.ExportConfig(c.Request.Context(), actor(c), kinds)
	s.answer(c, ex, err)
}

// createPlan answers, in order: 401 (middleware), 400, the idempotency
// answers, 403, 429/503, 422 validation_failed, 409 config_conflict (moved
// versions), 422 policy_conflict, 413. With ?preview=true it previews.
func (s *Server) createPlan(c *gin.Context) {
	preview, err := boolQuery(c, "preview")
	if err != nil {
		s.fail(c, err)
		return
	}
	body, err := s.readBody(c, planBodyLimit)
	if err != nil {
		s.fail(c, err)
		return
	}
	pr, err := ParsePlanRequest(body)
	if err != nil {
		s.fail(c, err)
		return
	}
	if preview {
		s.previewPlan(c, pr)
		return
	}
	s.idempotent(c, body, func(ctx context.Context, _ string) response {
		pp, err := s.d.Plans.PreparePlan(actor(c), pr)
		if err != nil {
			return s.errorResponse(c, err)
		}
		return s.createAdmitted(ctx, c, pp)
	})
}

// pendingCreation is a plan creation, a restore or a rebase whose
// permissions hold, waiting for its admission.
type pendingCreation interface {
	Create(ctx context.Context) (*plans.Plan, error)
	Refused(err error) error
}

// createAdmitted admits a prepared plan creation, restore or rebase (§10),
// then creates the plan: 201 with its Location.
func (s *Server) createAdmitted(ctx context.Context, c *gin.Context, pp pendingCreation) response {
	release, err := s.admit(ctx, c, false)
	if err != nil {
		return s.errorResponse(c, pp.Refused(err))
	}
	defer release()
	p, err := pp.Create(ctx)
	if err != nil {
		return s.errorResponse(c, err)
	}
	r := planResponse(http.StatusCreated, p)
	r.header.Set("Location", "/v1/config-plans/"+p.ID)
	return r
}

// previewPlan answers POST /v1/config-plans?preview=true (§14) in the
// order of plan creation, with 200 and the plan it would store; nothing is
// stored. An Idempotency-Key must be well formed, as at plan creation, and
// is otherwise ignored: there is nothing to replay.
func (s *Server) previewPlan(c *gin.Context, pr *plans.PlanRequest) {
	if _, err := idempotency.ParseKey(c.Request.Header.Values("Idempotency-Key")); err != nil {
		s.fail(c, invalidIdempotencyKey)
		return
	}
	ctx := c.Request.Context()
	pp, err := s.d.Plans.PreparePreview(actor(c), pr)
	if err != nil {
		s.fail(c, err)
		return
	}
	release, err := s.admitPreview(ctx, c)
	if err != nil {
		s.fail(c, err)
		return
	}
	defer release()
	p, err := pp.Preview(ctx)
	s.answer(c, p, err)
}

// boolQuery reads an optional true|false query parameter (absent: false);
// any other value is 400 malformed_request.
func boolQuery(c *gin.Context, name string) (bool, error) {
	v, present := c.GetQuery(name)
	switch {
	case !present || v == "false":
		return false, nil
	case v == "true":
		return true, nil
	}
	return false, &config.Error{Code: config.CodeMalformedRequest, Detail: name + " must be true or false"}
}

func (s *Server) getPlan(c *gin.Context) {
	p, err := s.d.Plans.GetPlan(c.Request.Context(), actor(c), c.Param("id"))
	s.answer(c, p, err)
}

func (s *Server) listPlans(c *gin.Context) {
	listed(s, c, config.PrefixPlan, func(ctx context.Context, lp plans.ListParams) (plans.PlanPage, error) {
		pg, err := s.d.Plans.ListPlans(ctx, actor(c), c.Query("status"), lp)
		return plans.PlanPage(pg), err
	})
}

func (s *Server) listEvents(c *gin.Context) {
	listed(s, c, config.PrefixEvent, func(ctx context.Context, lp plans.ListParams) (plans.Page[plans.Event], error) {
		return s.d.Plans.ListEvents(ctx, actor(c), c.Param("id"), lp)
	})
}

// answer writes v as a 200, or err as a problem.
func (s *Server) answer(c *gin.Context, v any, err error) {
	if err != nil {
		s.fail(c, err)
		return
	}
	s.write(c, jsonResponse(http.StatusOK, v))
}

// listed answers a cursor-paginated list: ?limit and ?cursor (an id with
// prefix) are read, then fetch gives the page.
func listed[T any](s *Server, c *gin.Context, prefix string, fetch func(context.Context, plans.ListParams) (T, error)) {
	lp, err := listParams(c, prefix)
	if err != nil {
		s.fail(c, err)
		return
	}
	v, err := fetch(c.Request.Context(), lp)
	s.answer(c, v, err)
}

// customVerb splits a "{id}:{verb}" path segment (Gin cannot route a custom
// verb after a parameter).
func customVerb(segment, verb string) (string, bool) {
	id, v, ok := strings.Cut(segment, ":")
	return id, ok && v == verb
}

var notFound = &config.Error{Code: config.CodeNotFound, Detail: "no such path"}

// planAction routes the custom verbs of a plan: :apply and :rebase.
func (s *Server) planAction(c *gin.Context) {
	if _, ok := customVerb(c.Param("id"), "rebase"); ok {
		s.rebasePlan(c)
		return
	}
	for _, verb := range []string{"approve", "reject"} {
		if id, ok := customVerb(c.Param("id"), verb); ok {
			s.reviewPlan(c, id, verb == "reject")
			return
		}
	}
	id, ok := customVerb(c.Param("id"), "apply")
	if !ok {
		s.fail(c, notFound)
		return
	}
	validateOnly, err := boolQuery(c, "validate_only")
	if err != nil {
		s.fail(c, err)
		return
	}
	body, err := s.readBody(c, defaultBodyLimit)
	if err != nil {
		s.fail(c, err)
		return
	}
	req, err := ParseApplyRequest(body)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.idempotent(c, body, func(ctx context.Context, fingerprint string) response {
		pa, replay, err := s.d.Plans.PrepareApply(ctx, actor(c), id, plans.ApplyOptions{ValidateOnly: validateOnly,
			IdempotencyFingerprint: fingerprint})
		if err != nil {
			return s.errorResponse(c, err)
		}
		if replay != nil {
			return applyResponse(*replay)
		}
		release, err := s.admit(ctx, c, true)
		if err != nil {
			return s.errorResponse(c, pa.Refused(err))
		}
		defer release()
		res, err := pa.Run(ctx, req)
		if err != nil {
			return s.errorResponse(c, err)
		}
		return applyResponse(res)
	})
}

// rebasePlan answers, in order: 401 (middleware), 400, the idempotency
// answers, 404, 403, 429/503, 409 config_plan_not_applicable, then the 422
// and 413 of plan creation.
func (s *Server) rebasePlan(c *gin.Context) {
	id, body, ok := s.verbWithoutInput(c, "id", "rebase")
	if !ok {
		return
	}
	s.idempotent(c, body, func(ctx context.Context, _ string) response {
		pr, err := s.d.Plans.PrepareRebase(ctx, actor(c), id)
		if err != nil {
			return s.errorResponse(c, err)
		}
		return s.createAdmitted(ctx, c, pr)
	})
}

// applyResponse is the 200 of an apply, marked when it is a replay.
func applyResponse(res plans.ApplyResult) response {
	r := planResponse(http.StatusOK, res.Plan)
	if res.Replayed {
		r.header.Set("Idempotent-Replayed", "true")
	}
	return r
}

// revisionView is a revision as the API shows it.
type revisionView struct {
	ID        string                `json:"id"`
	Object    string                `json:"object"`
	PlanID    string                `json:"plan_id"`
	CreatedAt plans.Time            `json:"created_at"`
	ExpiresAt plans.Time            `json:"expires_at"`
	Types     []string              `json:"types"`
	Counts    revisions.Counts      `json:"counts"`
	Resources *[]revisions.Resource `json:"resources,omitempty"`
}

func viewRevision(r *revisions.Revision, withResources bool) revisionView {
	v := revisionView{ID: r.ID, Object: "config_revision", PlanID: r.PlanID, CreatedAt: plans.Time(r.CreatedAt),
		ExpiresAt: plans.Time(r.ExpiresAt), Types: r.Types, Counts: r.Counts}
	if withResources {
		rs := r.Resources
		if rs == nil {
			rs = []revisions.Resource{}
		}
		v.Resources = &rs
	}
	return v
}

func (s *Server) getRevision(c *gin.Context) {
	rev, err := s.d.Revisions.GetRevision(c.Request.Context(), actor(c), c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	s.write(c, jsonResponse(http.StatusOK, viewRevision(rev, true)))
}

// diffRevision answers a revision beside the configuration now; it writes
// nothing and takes no rate limit.
func (s *Server) diffRevision(c *gin.Context) {
	d, err := s.d.Revisions.DiffRevision(c.Request.Context(), actor(c), c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	s.write(c, revisionDiffResponse(d))
}

func (s *Server) listRevisions(c *gin.Context) {
	listed(s, c, config.PrefixRevision, func(ctx context.Context, lp plans.ListParams) (plans.Page[revisionView], error) {
		pg, err := s.d.Revisions.ListRevisions(ctx, actor(c), lp)
		out := plans.Page[revisionView]{Data: make([]revisionView, len(pg.Data)), HasMore: pg.HasMore, NextCursor: pg.NextCursor}
		for i, r := range pg.Data {
			out.Data[i] = viewRevision(r, false)
		}
		return out, err
	})
}

func (s *Server) revisionAction(c *gin.Context) {
	id, body, ok := s.verbWithoutInput(c, "id", "restore")
	if !ok {
		return
	}
	s.idempotent(c, body, func(ctx context.Context, _ string) response {
		pp, err := s.d.Plans.PrepareRestore(ctx, actor(c), id)
		if err != nil {
			return s.errorResponse(c, err)
		}
		return s.createAdmitted(ctx, c, pp)
	})
}

func (s *Server) connectionAction(c *gin.Context) {
	key, body, ok := s.verbWithoutInput(c, "key", "test")
	if !ok {
		return
	}
	s.idempotent(c, body, func(ctx context.Context, _ string) response {
		res, err := s.d.Connections.TestConnection(ctx, actor(c), key)
		if err != nil {
			return s.errorResponse(c, err)
		}
		return jsonResponse(http.StatusOK, res)
	})
}

// verbWithoutInput reads a POST "{param}:{verb}" that takes no input: the
// path parameter, and a body that must be empty or {}. It answers the
// request itself when ok is false.
func (s *Server) verbWithoutInput(c *gin.Context, param, verb string) (value string, body []byte, ok bool) {
	value, ok = customVerb(c.Param(param), verb)
	if !ok {
		s.fail(c, notFound)
		return "", nil, false
	}
	body, err := s.readBody(c, defaultBodyLimit)
	if err == nil {
		err = emptyObject(body)
	}
	if err != nil {
		s.fail(c, err)
		return "", nil, false
	}
	return value, body, true
}

// emptyObject accepts an empty body or {}: the endpoints that take no input
// still refuse unknown fields.
func emptyObject(body []byte) error {
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return &config.Error{Code: config.CodeMalformedRequest, Detail: "the request body must be empty or a JSON object"}
	}
	var unknown []config.FieldError
	for k := range m {
		unknown = append(unknown, config.FieldError{Pointer: config.Pointer(k), Code: config.CodeUnknownField, Detail: "this request takes no fields"})
	}
	if len(unknown) > 0 {
		return &config.Error{Code: config.CodeUnknownField, Detail: "the request has unknown fields", Errors: unknown}
	}
	return nil
}

func (s *Server) listLogs(c *gin.Context) {
	listed(s, c, config.PrefixLog, func(ctx context.Context, lp plans.ListParams) (plans.Page[plans.LogEntry], error) {
		return s.d.Reads.ListLogs(ctx, actor(c), c.Query("type"), lp)
	})
}

// currentKey answers the request's own API key; any valid key may read it.
func (s *Server) currentKey(c *gin.Context) {
	s.answer(c, actor(c).CurrentKey(), nil)
}

func (s *Server) tokenActivity(c *gin.Context) {
	body, err := s.readBody(c, defaultBodyLimit)
	if err != nil {
		s.fail(c, err)
		return
	}
	ta, err := plans.DecodeTokenActivity(body)
	if err != nil {
		s.fail(c, err)
		return
	}
	if err := s.d.Environments.RecordTokenActivity(c.Request.Context(), ta); err != nil {
		s.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

func (s *Server) putPolicies(c *gin.Context) {
	body, err := s.readBody(c, defaultBodyLimit)
	if err != nil {
		s.fail(c, err)
		return
	}
	p, err := s.d.Environments.PutPolicies(c.Request.Context(), c.Param("id"), body)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.write(c, jsonResponse(http.StatusOK, p))
}
