package plans

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/keenauth/configplans/config"
	"strings"
)

// entry is one resource the plan sets: a spec of the document, or a
// deletion (spec nil).
type entry struct {
	kind    config.Kind
	key     string
	spec    json.RawMessage // nil: delete
	pointer string          // pointer of the entry in the request ("" for pruned)
}

// planState is what the planner's checks and its build see: the
// environment as the plan's transaction reads it, the entries of the
// document laid over it (post).
type planState struct {
	prune             bool
	planned, refTypes []config.Kind
	cur               state
	gens              map[config.Kind]int64
	material          map[string]string // connection id → confirmed material hash
	policies          config.Policies
	envName           string // the environment's name, when it has policies
	expected          []config.ExpectedVersion
	entries           []entry
	inDoc             map[string]bool // the document's resources, kind/key
	keep              map[string]bool // connections whose current material the plan keeps
	post              *postState
}

// runPlanChecks answers the planner's checks in the order of §5: every
// problem of the document and its references at once (validation_failed),
// then the resources the request expected at versions they are no longer
// at (config_conflict: a state check, after the document's own problems as
// the apply's row 13 comes after row 10), then the environment's policies
// (policy_conflict).
func runPlanChecks(ps *planState, problems []config.FieldError) error {
	problems = append(problems, referenceProblems(ps.entries, ps.post)...)
	if len(problems) > 0 {
		sortProblems(problems)
		return config.Problems(config.CodeValidationFailed, problems)
	}
	if moved := versionConflicts(ps.expected, ps.cur); len(moved) > 0 {
		return &config.Error{Code: config.CodeConfigConflict, Errors: moved,
			Detail: fmt.Sprintf("%d of the resources listed in versions changed since the export; nothing was stored", len(moved))}
	}
	if violations := planPolicyViolations(ps.entries, ps.cur, ps.policies); len(violations) > 0 {
		sortProblems(violations)
		return config.Problems(config.CodePolicyConflict, violations)
	}
	return nil
}

// keepMaterial makes an enterprise connection with oidc: null keep its
// current material, which the plan then leaves alone even when the
// federation service has not confirmed it: no secret, no write. A new
// enterprise connection needs its material: a problem.
func (ps *planState) keepMaterial() []config.FieldError {
	var problems []config.FieldError
	ps.keep = map[string]bool{}
	for i, e := range ps.entries {
		if e.kind != config.KindConnection || e.spec == nil {
			continue
		}
		if v := config.ViewConnection(e.spec); v.Type != "enterprise" || v.OIDC != nil {
			continue
		}
		var curOIDC json.RawMessage
		if r := ps.cur.get(config.KindConnection, e.key); r != nil {
			if cv := config.ViewConnection(json.RawMessage(r.Spec)); cv.Type == "enterprise" {
				curOIDC = cv.OIDC
			}
		}
		if curOIDC == nil {
			problems = append(problems, config.FieldError{Pointer: e.pointer + "/oidc", Code: config.CodeRequired,
				Detail: "a new enterprise connection needs its OIDC material (an object, not null)"})
			continue
		}
		ps.entries[i].spec = withMember(e.spec, "oidc", curOIDC)
		ps.keep[e.key] = true
	}
	return problems
}

// referenceProblems checks that the references of every resource of the
// document resolve after the plan, and that no deletion leaves a reference
// behind (§13): the apply would refuse it from the same state (row 13 for
// an api or an application, row 15 for a connection), which then only
// catches a reference that appeared after planning.
func referenceProblems(entries []entry, post *postState) []config.FieldError {
	var problems []config.FieldError
	for _, e := range entries {
		if e.spec == nil {
			if p, ok := inUseProblem(e, post); ok {
				problems = append(problems, p)
			}
			continue
		}
		seen := map[string]bool{}
		for _, ref := range config.References(e.kind, e.key, e.spec) {
			if code, detail, ok := post.resolve(ref); !ok {
				ptr := e.pointer + referencePointer(ref, code)
				if !seen[ptr] {
					seen[ptr] = true
					problems = append(problems, config.FieldError{Pointer: ptr, Code: code, Detail: detail})
				}
			}
		}
	}
	return problems
}

// inUseProblem refuses the deletion of e when a resource of the post-plan
// state still references it: at the deletion's member of the document, or
// at /prune for one that the prune makes.
func inUseProblem(e entry, post *postState) (config.FieldError, bool) {
	if post.cur.get(e.kind, e.key) == nil {
		return config.FieldError{}, false
	}
	refs := post.referrers(e.kind, e.key)
	if len(refs) == 0 {
		return config.FieldError{}, false
	}
	ptr := e.pointer
	if ptr == "" {
		ptr = "/prune"
	}
	return config.FieldError{Pointer: ptr, Code: config.CodeInUse,
		Detail: fmt.Sprintf("%s is still referenced by %s", resourceRef(e.kind, e.key), strings.Join(referrerPhrases(refs, post.readable), ", "))}, true
}

// planPolicyViolations checks every spec the plan changes against the
// environment's policies.
func planPolicyViolations(entries []entry, cur state, policies config.Policies) []config.FieldError {
	var violations []config.FieldError
	check := policies.Checker()
	for _, e := range entries {
		if e.spec != nil {
			if r := cur.get(e.kind, e.key); r == nil || !bytes.Equal(r.Spec, e.spec) {
				violations = append(violations, check(e.kind, e.spec, e.pointer)...)
			}
		}
	}
	return violations
}

// deletedApplications lists the existing applications the plan deletes:
// their token activity decides whether the deletion is protected.
func (ps *planState) deletedApplications() []string {
	var keys []string
	for _, e := range ps.entries {
		if e.kind == config.KindApplication && e.spec == nil && ps.cur.get(e.kind, e.key) != nil {
			keys = append(keys, e.key)
		}
	}
	return keys
}

// deletionWarning warns that a deletion must be confirmed at apply time
// (the rule of row 11, protectedDeletion).
func deletionWarning(c Change, ptr string, recent map[string]bool) (Warning, bool) {
	why, protected := protectedDeletion(c.Kind, c.Key, recent)
	if c.Action != ActionDelete || !protected {
		return Warning{}, false
	}
	target := resourceRef(c.Kind, c.Key)
	return Warning{Code: config.CodeDeletionRequiresConfirmation, Target: target, Pointer: ptr,
		Detail: why + " with confirm_deletions: [\"" + target + "\"]"}, true
}

// uniqueWarnings warns of the unique values us of a change that a
// resource outside the document holds after the plan: the apply refuses
// them while it does (row 14). holders is the index of the change's kind.
func uniqueWarnings(c Change, ptr string, us []config.UniqueValue, holders map[config.UniqueKey][]string, inDoc map[string]bool) []Warning {
	var out []Warning
	for _, u := range us {
		for _, other := range holders[u.Compared()] {
			if other != c.Key && !inDoc[resourceRef(c.Kind, other)] {
				out = append(out, Warning{Code: config.CodeUniqueValueInUse, Target: resourceRef(c.Kind, c.Key), Pointer: ptr + "/spec/" + u.Field,
					Detail: fmt.Sprintf("%s %s is already used by %s; the apply will be refused while it is", u.Field, config.QuoteShort(u.Value), resourceRef(c.Kind, other))})
				break
			}
		}
	}
	return out
}
