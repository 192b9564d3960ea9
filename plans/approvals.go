package plans

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/revisions"
)

// ConfigPolicies is what GET /v1/config-policies answers (§17): every
// policy of the environment with its value or its default, and the rules
// of §18.
type ConfigPolicies struct {
	Object string `json:"object"`
	config.Policies
}

// GetPolicies returns the policies in force in the actor's environment.
// It needs config:read.
func (s *Environments) GetPolicies(ctx context.Context, a Actor) (ConfigPolicies, error) {
	if err := a.Require(config.PermConfigRead); err != nil {
		return ConfigPolicies{}, err
	}
	raw, err := s.db.LoadPolicies(ctx, a.EnvironmentID)
	if err != nil {
		return ConfigPolicies{}, err
	}
	p, err := policiesOf(raw)
	if err != nil {
		return ConfigPolicies{}, err
	}
	if p.AllowedCallbackHosts == nil {
		p.AllowedCallbackHosts = []string{}
	}
	if p.Rules == nil {
		p.Rules = []config.Rule{}
	}
	return ConfigPolicies{Object: "config_policies", Policies: p}, nil
}

// Approval is an approval of a plan (§17).
type Approval struct {
	APIKeyID   string  `json:"api_key_id"`
	Owner      *string `json:"owner"`
	ApprovedAt Time    `json:"approved_at"`
	Comment    *string `json:"comment"`
}

// Rejection is the rejection (or the withdrawal) of a plan (§17).
type Rejection struct {
	APIKeyID   string  `json:"api_key_id"`
	Owner      *string `json:"owner"`
	RejectedAt Time    `json:"rejected_at"`
	Comment    string  `json:"comment"`
}

// MaxReviewComment bounds the comment of an approval or a rejection, in
// characters.
const MaxReviewComment = 1000

// appendReviewJSON appends the plan's approvals, approvals_required and
// rejection members.
func (p *Plan) appendReviewJSON(b []byte) []byte {
	b = append(b, `,"approvals":`...)
	b = append(b, config.MustJSON(p.Approvals)...)
	b = append(b, `,"approvals_required":`...)
	b = strconv.AppendInt(b, int64(p.ApprovalsRequired), 10)
	b = append(b, `,"rejection":`...)
	return append(b, config.MustJSON(p.Rejection)...)
}

// approvalsRequired is what p needs under pol: the largest of the
// policy's required_approvals and the approvals of the approval rules
// that caught a change when p was planned (its rule_approval warnings,
// §18); 0 when every change is a no_op.
func approvalsRequired(p *Plan, pol config.Policies) int {
	return approvalsNeeded(p, pol, ruleApprovals(p.Warnings))
}

// approvalsNeeded is the largest of required_approvals and ruleNeed, 0
// when every change of p is a no_op.
func approvalsNeeded(p *Plan, pol config.Policies, ruleNeed int) int {
	if !slices.ContainsFunc(p.Changes, func(c Change) bool { return c.Action != ActionNoOp }) {
		return 0
	}
	return max(pol.RequiredApprovals, ruleNeed)
}

// approvalsReceived counts the people who approved: approvals of keys with
// the same non-null owner count once, a key without owner alone.
func approvalsReceived(as []Approval) int {
	seen := map[string]bool{}
	for _, a := range as {
		who := "key " + a.APIKeyID
		if a.Owner != nil {
			who = "owner " + *a.Owner
		}
		seen[who] = true
	}
	return len(seen)
}

func approvalsOf(rows []configdb.ApprovalRow) []Approval {
	out := make([]Approval, len(rows))
	for i, r := range rows {
		out[i] = Approval{APIKeyID: r.APIKeyID, Owner: r.Owner, ApprovedAt: Time(r.ApprovedAt), Comment: r.Comment}
	}
	return out
}

// withReview reads the approvals of ps and the policies in force, and sets
// each plan's approvals and approvals_required.
func withReview(ctx context.Context, db *configdb.DB, envID string, ps ...*Plan) error {
	if len(ps) == 0 {
		return nil
	}
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	byPlan, err := db.Approvals(ctx, envID, ids)
	if err != nil {
		return err
	}
	raw, err := db.LoadPolicies(ctx, envID)
	if err != nil {
		return err
	}
	pol, err := policiesOf(raw)
	if err != nil {
		return err
	}
	for _, p := range ps {
		setReview(p, byPlan[p.ID], pol)
	}
	return nil
}

// setReview sets the approvals and approvals_required of p, from its
// approvals' rows and the policies in force.
func setReview(p *Plan, approvals []configdb.ApprovalRow, pol config.Policies) {
	p.Approvals = approvalsOf(approvals)
	p.ApprovalsRequired = approvalsRequired(p, pol)
}

// errApprovalRequired is row 9a of the apply (§17).
func errApprovalRequired(required, received int) *config.Error {
	return &config.Error{Code: config.CodeApprovalRequired,
		Detail: fmt.Sprintf("the plan needs %d approvals and has %d; nothing was written", required, received),
		Extra:  map[string]any{"approvals_required": required, "approvals_received": received}}
}

// checkApprovals answers the apply's row between 9 and 10 (§17) in its
// transaction, from the approvals read after the plan's row is locked
// (claimed, or locked by the transaction's claim; LockForApply): approvals
// and reviews take the same lock, so none is added while the apply counts.
// It returns the approvals counted. need is what the policies and the
// rules in force now ask of p.
func checkApprovals(as []Approval, need int) ([]Approval, error) {
	if got := approvalsReceived(as); got < need {
		return nil, errApprovalRequired(need, got)
	}
	return as, nil
}

// approvedBy is config.applied's data.approved_by: the key and owner of
// every approval counted.
func approvedBy(as []Approval) []map[string]any {
	out := make([]map[string]any, len(as))
	for i, a := range as {
		out[i] = map[string]any{"api_key_id": a.APIKeyID, "owner": a.Owner}
	}
	return out
}

// CheckReviewComment checks the comment of an approval or a rejection: at
// most 1,000 characters and no control character (a newline included);
// a problem at /comment.
func CheckReviewComment(comment string) error {
	bad := ""
	if n := utf8.RuneCountInString(comment); n > MaxReviewComment {
		bad = fmt.Sprintf("the comment is %d characters long; at most %d are allowed", n, MaxReviewComment)
	} else if i := strings.IndexFunc(comment, unicode.IsControl); i >= 0 {
		bad = "the comment holds a control character; a newline is one"
	}
	if bad == "" {
		return nil
	}
	return &config.Error{Code: config.CodeMalformedRequest, Detail: bad,
		Errors: []config.FieldError{{Pointer: "/comment", Code: config.CodeInvalid, Detail: bad}}}
}

// Review is an approval or a rejection of a plan.
type Review struct {
	Reject  bool
	Comment *string
}

// ReviewPlan approves or rejects a plan of the actor's environment (§17),
// answering in order 404, 403 insufficient_permissions, 410
// config_plan_expired, 409 config_plan_not_applicable and, to approve,
// 403 self_approval_forbidden. The plan's row is locked while its status
// is read and the review recorded (LockPlanForReview), the lock an apply
// takes, so a review and an apply never interleave. A second approval by
// the same key changes nothing.
func (s *Service) ReviewPlan(ctx context.Context, a Actor, planID string, r Review) (*Plan, error) {
	p, err := s.loadPlan(ctx, a.EnvironmentID, planID)
	if err != nil {
		return nil, err
	}
	withdrawal := r.Reject && p.CreatedBy == a.APIKeyID
	if !withdrawal {
		if err := a.Require(readPerms(p.Types, config.PermConfigApprove)...); err != nil {
			return nil, err
		}
	}
	err = s.db.InTx(ctx, sql.LevelRepeatableRead, func(tx *configdb.Tx) error {
		row, err := tx.LockPlanForReview(ctx, p.key())
		if err != nil {
			return err
		}
		switch st := effectiveStatus(row, tx.Now); st {
		case StatusPlanned:
		case StatusExpired:
			return &config.Error{Code: config.CodeConfigPlanExpired, Detail: "the plan's validity is over; create a new plan"}
		default:
			verb := "approved"
			if r.Reject {
				verb = "rejected"
			}
			return &config.Error{Code: config.CodeConfigPlanNotApplicable, Detail: "the plan is " + string(st) + " and cannot be " + verb,
				Extra: map[string]any{"plan_status": st}}
		}
		data := map[string]any{"comment": r.Comment}
		if r.Reject {
			rej := Rejection{APIKeyID: a.APIKeyID, Owner: a.Owner, RejectedAt: Time(tx.Now), Comment: config.Deref(r.Comment)}
			if err := tx.RejectPlan(ctx, p.key(), config.MustJSON(rej)); err != nil {
				return err
			}
			return recordEvent(ctx, tx, a, p.ID, "plan_rejected", data)
		}
		if row.CreatedBy == a.APIKeyID || a.Owner != nil && row.CreatedByOwner != nil && *a.Owner == *row.CreatedByOwner {
			return &config.Error{Code: config.CodeSelfApprovalForbidden, Detail: "a plan cannot be approved by the key that created it, nor by a key of the same owner"}
		}
		added, err := tx.AddApproval(ctx, configdb.ApprovalRow{EnvironmentID: a.EnvironmentID, PlanID: p.ID, APIKeyID: a.APIKeyID, Owner: a.Owner,
			Comment: r.Comment})
		if err != nil || !added {
			return err
		}
		return recordEvent(ctx, tx, a, p.ID, "plan_approved", data)
	})
	if err != nil {
		if isNotFound(err) {
			return nil, &config.Error{Code: config.CodeNotFound, Detail: "no such config plan"}
		}
		return nil, err
	}
	return s.loadPlan(context.WithoutCancel(ctx), a.EnvironmentID, p.ID)
}

// appliedLogData is config.applied's data: the counts and approved_by
// (always present, [] when no approval was counted).
func appliedLogData(counts revisions.Counts, approvals []Approval) []byte {
	var data map[string]any
	_ = json.Unmarshal(config.MustJSON(counts), &data)
	data["approved_by"] = approvedBy(approvals)
	return config.MustJSON(data)
}
