package plans

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// applyState is what the checks of an apply see: the plan, and the
// environment as the apply's transaction reads it.
type applyState struct {
	plan *Plan
	cur  state // the resources the plan's changes need
	post *postState
	gens map[config.Kind]int64 // the generations of the planned and referencing types
	// tests are the last connection tests, by connection id, of the
	// connections that a change activates.
	tests    map[string]configdb.ConnectionTest
	policies config.Policies
	envName  string // the environment's name, when it has policies
	// ruleBlocks are the problems of the block rules in force that catch
	// a change (row 17 with the policies), ruleApprovals the most
	// approvals an approval rule that catches one asks for (§18).
	ruleBlocks    []config.FieldError
	ruleApprovals int
	// approvals are the plan's, read with the locks (none when validating
	// only).
	approvals []Approval
	// uniqueValues[i], when set, are the unique values of the spec of the
	// plan's change i, read once by loadApplyState for the need and the
	// check of row 14 (nil: checkUniqueValues reads them).
	uniqueValues [][]config.UniqueValue
}

// applyChecks are rows 13 to 17 of the apply's table (§6), in its order:
// the first that fails answers. Each reads only the state, so that each is
// tested on its own.
var applyChecks = []func(*applyState) error{
	checkConflicts,         // 13 config_conflict
	checkUniqueValues,      // 14 conflict
	checkConnectionsInUse,  // 15 connection_in_use
	checkConnectionsTested, // 16 connection_test_required
	checkApplyPolicies,     // 17 policy_conflict
}

// runApplyChecks answers the first of applyChecks that fails.
func runApplyChecks(st *applyState) error {
	for _, check := range applyChecks {
		if err := check(st); err != nil {
			return err
		}
	}
	return nil
}

// failing answers code with the problems errs, or nil when there are none.
func failing(code config.Code, detail string, errs []config.FieldError) error {
	if len(errs) == 0 {
		return nil
	}
	return &config.Error{Code: code, Detail: detail, Errors: errs}
}

// checkConflicts is row 13: the target changed after planning. A planned
// resource is at another version, a planned or referencing type changed,
// or a reference of the plan is now broken.
func checkConflicts(st *applyState) error {
	p := st.plan
	var conflicts []config.FieldError
	var ref []byte
	for i, c := range p.Changes {
		ref = appendRef(ref[:0], c.Kind, c.Key)
		v := 0
		if r := st.cur.get(c.Kind, c.Key); r != nil {
			v = r.Version
		}
		if planned := p.versions[string(ref)]; v != planned {
			conflicts = append(conflicts, config.FieldError{Pointer: fmt.Sprintf("/changes/%d", i), Code: config.CodeVersionChanged,
				Detail: fmt.Sprintf("%s is at version %d, the plan was made at version %d", ref, v, planned)})
		}
	}
	for i, k := range p.Types {
		if st.gens[k] != p.fingerprints[k] {
			conflicts = append(conflicts, config.FieldError{Pointer: fmt.Sprintf("/types/%d", i), Code: config.CodeTypeChanged,
				Detail: fmt.Sprintf("the %s resources changed after planning", k)})
		}
	}
	for i, k := range p.ReferencingTypes {
		if st.gens[k] != p.fingerprints[k] {
			conflicts = append(conflicts, config.FieldError{Pointer: fmt.Sprintf("/referencing_types/%d", i), Code: config.CodeTypeChanged,
				Detail: fmt.Sprintf("the %s resources, which reference a planned type, changed after planning", k)})
		}
	}
	conflicts = append(conflicts, brokenReferences(st)...)
	return failing(config.CodeConfigConflict, "the configuration changed after the plan was made; create a new plan", conflicts)
}

// brokenReferences lists the changes whose references no longer resolve,
// and the deletions (but of connections: row 15) now referenced.
func brokenReferences(st *applyState) []config.FieldError {
	var out []config.FieldError
	for i, c := range st.plan.Changes {
		switch {
		case c.Action == ActionCreate || c.Action == ActionUpdate:
			for _, ref := range config.References(c.Kind, c.Key, c.Spec) {
				if _, detail, ok := st.post.resolve(ref); !ok {
					out = append(out, config.FieldError{Pointer: fmt.Sprintf("/changes/%d", i), Code: config.CodeReferenceBroken, Detail: detail})
				}
			}
		case c.Action == ActionDelete && c.Kind != config.KindConnection:
			if refs := st.post.referrers(c.Kind, c.Key); len(refs) > 0 {
				out = append(out, config.FieldError{Pointer: fmt.Sprintf("/changes/%d", i), Code: config.CodeReferenceBroken,
					Detail: fmt.Sprintf("%s is now referenced by %s", resourceRef(c.Kind, c.Key), strings.Join(referrerPhrases(refs, st.post.readable), ", "))})
			}
		}
	}
	return out
}

// checkUniqueValues is row 14: a unique value another resource holds. The
// holders of the unique values of a kind are indexed once, in key order:
// scanning the kind for every change made an apply quadratic in its size.
// Each change's unique values are read once, before the loop: the index
// of its kind takes them as they are instead of reading its spec again.
func checkUniqueValues(st *applyState) error {
	changes := st.plan.Changes
	values := st.uniqueValues
	if values == nil {
		values = make([][]config.UniqueValue, len(changes))
		for i, c := range changes {
			if c.Action == ActionCreate || c.Action == ActionUpdate {
				values[i] = config.UniqueValues(c.Kind, c.Spec)
			}
		}
	}
	planned := make(map[string]plannedValues, len(changes))
	for i, c := range changes {
		if c.Action == ActionCreate || c.Action == ActionUpdate {
			planned[resourceRef(c.Kind, c.Key)] = plannedValues{spec: c.Spec, values: values[i]}
		}
	}
	var dups []config.FieldError
	holders := map[config.Kind]map[config.UniqueKey][]string{}
	for i, c := range changes {
		for _, u := range values[i] {
			if holders[c.Kind] == nil {
				holders[c.Kind] = st.post.uniqueHoldersOf(c.Kind, planned)
			}
			for _, other := range holders[c.Kind][u.Compared()] {
				if other != c.Key {
					dups = append(dups, config.FieldError{Pointer: fmt.Sprintf("/changes/%d/spec/%s", i, u.Field), Code: config.CodeDuplicate,
						Detail: fmt.Sprintf("%s %s is used by %s", u.Field, config.QuoteShort(u.Value), resourceRef(c.Kind, other))})
				}
			}
		}
	}
	return failing(config.CodeConflict, "another resource already uses a unique value of this plan", dups)
}

// checkConnectionsInUse is row 15: a connection to delete is still
// referenced.
func checkConnectionsInUse(st *applyState) error {
	var inUse []config.FieldError
	for i, c := range st.plan.Changes {
		if c.Action == ActionDelete && c.Kind == config.KindConnection {
			for _, ref := range referrerPhrases(st.post.referrers(c.Kind, c.Key), st.post.readable) {
				inUse = append(inUse, config.FieldError{Pointer: fmt.Sprintf("/changes/%d", i), Code: config.CodeInUse,
					Detail: fmt.Sprintf("connection %s is still used by %s", config.QuoteShort(c.Key), ref)})
			}
		}
	}
	return failing(config.CodeConnectionInUse, "a connection to delete is still referenced", inUse)
}

// activatedConnection returns the stored connection that change i makes an
// active enterprise connection (nil for a creation), and whether it does.
// Row 16 names creations and activations only: an update of a connection
// that is already active (even of its material) is not refused; the
// material's test becomes stale, which matters the next time the
// connection is activated.
func activatedConnection(c Change, cur state) (*configdb.Resource, bool) {
	if c.Kind != config.KindConnection || (c.Action != ActionCreate && c.Action != ActionUpdate) {
		return nil, false
	}
	if v := config.ViewConnection(c.Spec); v.Type != "enterprise" || !v.Active {
		return nil, false
	}
	r := cur.get(c.Kind, c.Key)
	if r != nil {
		if cv := config.ViewConnection(json.RawMessage(r.Spec)); cv.Type == "enterprise" && cv.Active {
			return nil, false
		}
	}
	return r, true
}

// checkConnectionsTested is row 16: a change creates an active enterprise
// connection, or activates one, without a successful test of the material
// it will have.
func checkConnectionsTested(st *applyState) error {
	var untested []config.FieldError
	for i, c := range st.plan.Changes {
		r, activated := activatedConnection(c, st.cur)
		if !activated {
			continue
		}
		if r != nil {
			t := st.tests[r.ResourceID]
			if t.Status == "succeeded" && t.MaterialHash == config.MaterialHash(config.ViewConnection(c.Spec).OIDC) {
				continue
			}
		}
		untested = append(untested, config.FieldError{Pointer: fmt.Sprintf("/changes/%d/spec", i), Code: config.CodeTestRequired,
			Detail: fmt.Sprintf("connection %s has no successful test of this material: apply it inactive, test it, then activate it", config.QuoteShort(c.Key))})
	}
	return failing(config.CodeConnectionTestRequired, "an enterprise connection can be active only after a successful connection test of its material", untested)
}

// checkApplyPolicies is row 17: a change conflicts with the environment's
// policies, or a block rule catches it, as they are now.
func checkApplyPolicies(st *applyState) error {
	var violations []config.FieldError
	check := st.policies.Checker()
	for i, c := range st.plan.Changes {
		if c.Action == ActionCreate || c.Action == ActionUpdate {
			violations = append(violations, check(c.Kind, c.Spec, fmt.Sprintf("/changes/%d/spec", i))...)
		}
	}
	if violations = append(violations, st.ruleBlocks...); len(violations) > 0 {
		sortProblems(violations)
		return config.Problems(config.CodePolicyConflict, violations)
	}
	return nil
}

// checkDeletionsConfirmed is row 11: a protected deletion is missing from
// confirm_deletions (confirmed). recent are the deleted applications that
// received a token in the last 30 days.
func checkDeletionsConfirmed(changes []Change, recent, confirmed map[string]bool) error {
	var missing []string
	for _, c := range changes {
		ref := resourceRef(c.Kind, c.Key)
		if _, protected := protectedDeletion(c.Kind, c.Key, recent); c.Action == ActionDelete && protected && !confirmed[ref] {
			missing = append(missing, ref)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return &config.Error{Code: config.CodeDeletionNotConfirmed, Detail: fmt.Sprintf("%d protected deletion(s) must be confirmed in confirm_deletions", len(missing)),
		Extra: map[string]any{"unconfirmed_deletions": missing}}
}

// protectedDeletion tells whether deleting kind/key must be confirmed
// (§6): a connection, or an application that received a token in the last
// 30 days (recent). why says so, for the plan's warning.
func protectedDeletion(k config.Kind, key string, recent map[string]bool) (why string, protected bool) {
	switch {
	case k == config.KindConnection:
		return "deleting a connection must be confirmed", true
	case k == config.KindApplication && recent[key]:
		return "the application received a token in the last 30 days; deleting it must be confirmed", true
	}
	return "", false
}

// deletedApplications lists the applications that changes delete: the
// ones whose token activity decides whether their deletion is protected.
func deletedApplications(changes []Change) []string {
	var out []string
	for _, c := range changes {
		if c.Action == ActionDelete && c.Kind == config.KindApplication {
			out = append(out, c.Key)
		}
	}
	return out
}
