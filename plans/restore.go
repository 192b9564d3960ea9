package plans

import (
	"context"
	"slices"

	"github.com/keenauth/configplans/config"
)

// PrepareRestore prepares a plan whose changes bring every resource of a
// revision back to its recorded state: a resource the apply created is
// deleted, the others get their former spec back. It needs the permissions
// of plan creation over the revision's types; the plan is made by the
// PendingPlan's Create once admitted.
func (s *Service) PrepareRestore(ctx context.Context, a Actor, revisionID string) (_ *PendingPlan, err error) {
	rev, err := readRevision(ctx, s.db, s.cfg.RevisionLimit, a, revisionID, config.PermConfigWrite)
	if err != nil {
		s.hooks.observePlanCreated(&err)
		return nil, err
	}
	doc := &config.Document{Entries: map[config.Kind][]config.Entry{}}
	formerIDs := map[string]string{}
	for _, t := range rev.Types {
		doc.Types = append(doc.Types, config.Kind(t))
	}
	for _, r := range rev.Resources {
		k := config.Kind(r.Kind)
		if !slices.Contains(doc.Types, k) {
			doc.Types = append(doc.Types, k)
		}
		e := config.Entry{Kind: k, Key: r.Key}
		if k == config.KindConnection && Action(r.Action) == ActionDelete {
			formerIDs[r.Key] = r.ResourceIDBefore
		}
		if Action(r.Action) != ActionCreate {
			e.Spec = config.Canonical(r.SpecBefore)
		}
		doc.Entries[k] = append(doc.Entries[k], e)
	}
	sortKinds(doc.Types)
	return &PendingPlan{s: s, a: a, pr: &PlanRequest{Doc: doc}, formerIDs: formerIDs}, nil
}
