package service

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/plans"
)

// endpointBody is the body of POST /v1/webhook-endpoints and of its PATCH,
// closed.
type endpointBody struct {
	URL         *string   `json:"url"`
	Events      *[]string `json:"events"`
	Description *string   `json:"description"`
	Status      *string   `json:"status"`
}

// parseEndpoint reads an endpoint's body: 400 malformed_request or
// unknown_field. A creation takes no status (an endpoint starts enabled);
// a description may be null (none).
func parseEndpoint(body []byte, create bool) (plans.EndpointInput, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	var present map[string]json.RawMessage
	if err := config.StrictObject(body, &present); err != nil {
		return plans.EndpointInput{}, err
	}
	in := plans.EndpointInput{}
	if raw, ok := present["description"]; ok && string(bytes.TrimSpace(raw)) == "null" {
		delete(present, "description")
		in.DescriptionSet = true
		body = config.MustJSON(present)
	}
	var b endpointBody
	if err := config.DecodeObject(body, &b); err != nil {
		return plans.EndpointInput{}, err
	}
	if create && b.Status != nil {
		return plans.EndpointInput{}, &config.Error{Code: config.CodeUnknownField, Detail: "an endpoint is created enabled; PATCH its status",
			Errors: []config.FieldError{{Pointer: "/status", Code: config.CodeUnknownField, Detail: "not a field of a creation"}}}
	}
	in.URL, in.Status = b.URL, b.Status
	if b.Description != nil {
		in.Description, in.DescriptionSet = b.Description, true
	}
	if b.Events != nil {
		in.Events, in.EventsSet = *b.Events, true
	}
	return in, nil
}

func (s *Server) createEndpoint(c *gin.Context) {
	body, err := s.readBody(c, defaultBodyLimit)
	if err != nil {
		s.fail(c, err)
		return
	}
	in, err := parseEndpoint(body, true)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.idempotent(c, body, func(ctx context.Context, _ string) response {
		e, err := s.d.Webhooks.CreateEndpoint(ctx, actor(c), in)
		if err != nil {
			return s.errorResponse(c, err)
		}
		return jsonResponse(http.StatusCreated, e)
	})
}

func (s *Server) listEndpoints(c *gin.Context) {
	listed(s, c, plans.PrefixWebhookEndpoint, func(ctx context.Context, lp plans.ListParams) (plans.Page[plans.WebhookEndpoint], error) {
		return s.d.Webhooks.ListEndpoints(ctx, actor(c), lp)
	})
}

func (s *Server) getEndpoint(c *gin.Context) {
	e, err := s.d.Webhooks.GetEndpoint(c.Request.Context(), actor(c), c.Param("id"))
	s.answer(c, e, err)
}

func (s *Server) patchEndpoint(c *gin.Context) {
	body, err := s.readBody(c, defaultBodyLimit)
	if err != nil {
		s.fail(c, err)
		return
	}
	in, err := parseEndpoint(body, false)
	if err != nil {
		s.fail(c, err)
		return
	}
	e, err := s.d.Webhooks.UpdateEndpoint(c.Request.Context(), actor(c), c.Param("id"), in)
	s.answer(c, e, err)
}

func (s *Server) deleteEndpoint(c *gin.Context) {
	if err := s.d.Webhooks.DeleteEndpoint(c.Request.Context(), actor(c), c.Param("id")); err != nil {
		s.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// endpointAction answers POST /v1/webhook-endpoints/{id}:rotate-secret.
func (s *Server) endpointAction(c *gin.Context) {
	id, body, ok := s.verbWithoutInput(c, "id", "rotate-secret")
	if !ok {
		return
	}
	s.idempotent(c, body, func(ctx context.Context, _ string) response {
		e, err := s.d.Webhooks.RotateSecret(ctx, actor(c), id)
		if err != nil {
			return s.errorResponse(c, err)
		}
		return jsonResponse(http.StatusOK, e)
	})
}

// endpointDeliveries answers GET /v1/webhook-endpoints/{id}/deliveries.
func (s *Server) endpointDeliveries(c *gin.Context) {
	listed(s, c, plans.PrefixWebhookMessage, func(ctx context.Context, lp plans.ListParams) (plans.Page[plans.WebhookDelivery], error) {
		return s.d.Webhooks.ListDeliveries(ctx, actor(c), c.Param("id"), lp)
	})
}

// deliveryAction answers POST /v1/webhook-endpoints/{id}/deliveries/{msg_id}:retry:
// 202 with the delivery, pending again.
func (s *Server) deliveryAction(c *gin.Context) {
	msgID, body, ok := s.verbWithoutInput(c, "msg_id", "retry")
	if !ok {
		return
	}
	s.idempotent(c, body, func(ctx context.Context, _ string) response {
		d, err := s.d.Webhooks.RetryDelivery(ctx, actor(c), c.Param("id"), msgID)
		if err != nil {
			return s.errorResponse(c, err)
		}
		return jsonResponse(http.StatusAccepted, d)
	})
}
