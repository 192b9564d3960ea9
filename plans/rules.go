package plans

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/guardrails"
	"github.com/keenauth/configplans/parallel"
)

// The warnings of the guardrail rules (§18).
const (
	CodeRuleWarning  config.Code = "rule_warning"
	CodeRuleApproval config.Code = "rule_approval"
)

// ruleVerdict is what the rules decide of a plan's changes: the warnings
// of warn and approval rules, a problem per change a block rule catches,
// and the most approvals an approval rule that caught a change asks for.
type ruleVerdict struct {
	warnings  []Warning
	blocks    []config.FieldError
	approvals int
}

// ruleInput is what the rules read of a plan: its changes, the spec each
// had before (nil for none), and where a block points for each.
type ruleInput struct {
	changes []Change
	old     func(i int) json.RawMessage
	pointer func(i int) string
}

// rulesEvaluator compiles (or takes from the cache) the rules of pol, and
// readies them for the environment envID, named envName (which the plan's
// or the apply's head read with the policies). nil when there are none.
func rulesEvaluator(envID, envName string, pol config.Policies) (*guardrails.Evaluator, error) {
	if len(pol.Rules) == 0 {
		return nil, nil
	}
	set, err := guardrails.Programs(pol.Rules)
	if err != nil {
		return nil, err
	}
	return set.Evaluator(guardrails.Environment{ID: envID, Name: envName}), nil
}

// evalRules evaluates the rules once for every change other than no_op.
func evalRules(ev *guardrails.Evaluator, in ruleInput) ruleVerdict {
	var v ruleVerdict
	if ev == nil {
		return v
	}
	for i, caught := range catchAll(ev, in) {
		for _, c := range caught {
			v.add(c, in.changes[i], i, in.pointer)
		}
	}
	return v
}

// guardrailsChange is c as the rules see it, with old its spec before.
func guardrailsChange(c Change, old json.RawMessage) guardrails.Change {
	return guardrails.Change{Kind: string(c.Kind), Key: c.Key, Action: string(c.Action), Old: old, New: c.Spec}
}

// rulesChunk is the fewest changes that catchAll gives a goroutine of
// its own.
const rulesChunk = 128

// catchAll evaluates the rules for every change other than no_op, and
// returns what caught each, by the change's index. A large plan's changes
// are evaluated on up to one goroutine per processor (parallel.Each): the
// rules of a 1,000-change plan cost as much CPU as before, in about half
// the time on two idle cores. The evaluator is safe for concurrent use,
// and old only reads the state.
func catchAll(ev *guardrails.Evaluator, in ruleInput) [][]guardrails.Catch {
	out := make([][]guardrails.Catch, len(in.changes))
	parallel.Each(len(in.changes), parallel.Workers(len(in.changes), rulesChunk), func(i int) {
		if c := in.changes[i]; c.Action != ActionNoOp {
			out[i] = ev.Eval(guardrailsChange(c, in.old(i)))
		}
	})
	return out
}

func (v *ruleVerdict) add(caught guardrails.Catch, c Change, i int, pointer func(int) string) {
	r := caught.Rule
	w := Warning{Target: resourceRef(c.Kind, c.Key), Pointer: fmt.Sprintf("/changes/%d", i), Detail: caught.Detail(), Rule: r.RuleName()}
	switch r.Mode() {
	case config.EnforceWarn:
		w.Code = CodeRuleWarning
		v.warnings = append(v.warnings, w)
	case config.EnforceApproval:
		w.Code, w.Approvals = CodeRuleApproval, r.RequiredApprovals()
		v.warnings = append(v.warnings, w)
		v.approvals = max(v.approvals, r.RequiredApprovals())
	default:
		v.blocks = append(v.blocks, config.FieldError{Pointer: pointer(i), Code: config.Code(r.RuleName()), Detail: caught.Detail()})
	}
}

// ruleApprovals is the most approvals a rule_approval warning of ws asks
// for (0: none).
func ruleApprovals(ws []Warning) int {
	n := 0
	for _, w := range ws {
		if w.Code == CodeRuleApproval {
			n = max(n, w.Approvals)
		}
	}
	return n
}

// applyPlanRules evaluates the rules over a computed plan p (its changes in
// the order of ps.entries): their warnings join the plan's, an approval
// rule raises approvals_required, and a block rule refuses the plan with
// policy_conflict at the change's entry in the document (/prune for a
// deletion the prune makes), together with the problems of §11's policies
// (policyErr, when they have any).
func applyPlanRules(envID string, ps *planState, p *Plan, policyErr error) error {
	ev, err := rulesEvaluator(envID, ps.envName, ps.policies)
	if err != nil {
		return err
	}
	v := evalRules(ev, ruleInput{
		changes: p.Changes,
		old: func(i int) json.RawMessage {
			if r := ps.cur.get(p.Changes[i].Kind, p.Changes[i].Key); r != nil {
				return json.RawMessage(r.Spec)
			}
			return nil
		},
		pointer: func(i int) string {
			if ptr := ps.entries[i].pointer; ptr != "" {
				return ptr
			}
			return "/prune"
		},
	})
	if problems := append(policyProblems(policyErr), v.blocks...); len(problems) > 0 {
		sortProblems(problems)
		return config.Problems(config.CodePolicyConflict, problems)
	}
	p.Warnings = append(p.Warnings, v.warnings...)
	p.ApprovalsRequired = approvalsRequired(p, ps.policies)
	return nil
}

// isPolicyConflict tells whether err answers policy_conflict.
func isPolicyConflict(err error) bool {
	var e *config.Error
	return errors.As(err, &e) && e.Code == config.CodePolicyConflict
}

// policyProblems are the problems of a policy_conflict error (none for
// nil).
func policyProblems(err error) []config.FieldError {
	var e *config.Error
	if errors.As(err, &e) {
		return e.Errors
	}
	return nil
}

// applyRules evaluates, in the apply's transaction, the rules in force
// now over the plan's changes: a block rule's problems join row 17's
// (policy_conflict at /changes/<i>), and an approval rule's approvals
// are what the apply needs beside required_approvals. A warn rule changes
// nothing. The specs before are today's, which row 13 holds to the
// plan's.
func applyRules(st *applyState) error {
	ev, err := rulesEvaluator(st.plan.EnvironmentID, st.envName, st.policies)
	if err != nil {
		return err
	}
	changes := st.plan.Changes
	v := evalRules(ev, ruleInput{
		changes: changes,
		old: func(i int) json.RawMessage {
			if r := st.cur.get(changes[i].Kind, changes[i].Key); r != nil {
				return json.RawMessage(r.Spec)
			}
			return nil
		},
		pointer: func(i int) string { return fmt.Sprintf("/changes/%d", i) },
	})
	st.ruleBlocks, st.ruleApprovals = v.blocks, v.approvals
	return nil
}
