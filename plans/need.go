package plans

import (
	"encoding/json"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// need is the part of an environment that planning or applying a set of
// changes must see, so that the cost of a plan grows with its changes and
// not with the environment: the resources it names, those its references
// point to, those that hold one of its unique values, and — only for a
// deletion, whose referrers can be anywhere, or for prune, which must know
// every key — whole kinds.
type need struct {
	keys    map[config.Kind]map[string]bool
	full    map[config.Kind]bool
	uniques map[config.Kind]map[string]map[string]bool // kind → field → UniqueValue.Key
}

func newNeed() *need {
	return &need{keys: map[config.Kind]map[string]bool{}, full: map[config.Kind]bool{}, uniques: map[config.Kind]map[string]map[string]bool{}}
}

func (n *need) key(k config.Kind, key string) {
	if n.keys[k] == nil {
		n.keys[k] = map[string]bool{}
	}
	n.keys[k][key] = true
}

func (n *need) kind(k config.Kind) { n.full[k] = true }

// resource records what a resource's planned spec (nil: a deletion) needs
// besides the resource itself.
func (n *need) resource(k config.Kind, key string, spec json.RawMessage) {
	var uniques []config.UniqueValue
	if spec != nil {
		uniques = config.UniqueValues(k, spec)
	}
	n.resourceWith(k, key, spec, uniques)
}

// resourceWith is resource with the unique values of spec already read
// (config.UniqueValues).
func (n *need) resourceWith(k config.Kind, key string, spec json.RawMessage, uniques []config.UniqueValue) {
	n.key(k, key)
	if spec == nil {
		for _, rk := range referencedBy[k] {
			n.kind(rk)
		}
		return
	}
	for _, ref := range config.References(k, key, spec) {
		n.key(ref.Kind, ref.Key)
	}
	for _, u := range uniques {
		if n.uniques[k] == nil {
			n.uniques[k] = map[string]map[string]bool{}
		}
		if n.uniques[k][u.Field] == nil {
			n.uniques[k][u.Field] = map[string]bool{}
		}
		n.uniques[k][u.Field][u.Key] = true
	}
}

// selection is what n names, for the storage: whole kinds in write
// order, then the resources of the other kinds by key and by unique value.
func (n *need) selection() configdb.Selection {
	var sel configdb.Selection
	for _, k := range config.Kinds {
		if n.full[k.Kind] {
			sel.Kinds = append(sel.Kinds, string(k.Kind))
		}
	}
	for k, keys := range n.keys {
		if n.full[k] {
			continue
		}
		for key := range keys {
			sel.Keys = append(sel.Keys, [2]string{string(k), key})
		}
	}
	for k, fields := range n.uniques {
		if n.full[k] {
			continue
		}
		if sel.Unique == nil {
			sel.Unique = map[string]map[string][]string{}
		}
		sel.Unique[string(k)] = map[string][]string{}
		for field, set := range fields {
			for v := range set {
				sel.Unique[string(k)][field] = append(sel.Unique[string(k)][field], v)
			}
		}
	}
	return sel
}

// stateOf is the state of the rows read for a need (configdb's
// LockForApply and PlanHead read them with the rest). With canonicalize,
// every spec is re-encoded canonically, which the planner needs to compare
// specs byte for byte; the apply only decodes them.
func stateOf(rows []configdb.Resource, canonicalize bool) state {
	st := state{}
	for _, k := range config.Kinds {
		st[k.Kind] = map[string]*configdb.Resource{}
	}
	st.add(rows, canonicalize)
	return st
}
