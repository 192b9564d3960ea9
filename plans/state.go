package plans

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// referencedBy lists, per kind, the kinds whose specs can reference it.
var referencedBy = map[config.Kind][]config.Kind{
	config.KindAPI:         {config.KindRole, config.KindApplication},
	config.KindConnection:  {config.KindApplication},
	config.KindApplication: {config.KindApplicationBranding},
}

// referencingTypes are the types outside planned that reference a planned type.
func referencingTypes(planned []config.Kind) []config.Kind {
	in := map[config.Kind]bool{}
	for _, k := range planned {
		in[k] = true
	}
	var out []config.Kind
	for _, k := range planned {
		for _, r := range referencedBy[k] {
			if !in[r] && !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	sortKinds(out)
	return out
}

func sortKinds(ks []config.Kind) {
	slices.SortFunc(ks, func(a, b config.Kind) int { return config.WriteOrder(a) - config.WriteOrder(b) })
}

// state is the configuration of an environment for a set of kinds.
type state map[config.Kind]map[string]*configdb.Resource

func (st state) get(k config.Kind, key string) *configdb.Resource {
	if m := st[k]; m != nil {
		return m[key]
	}
	return nil
}

// add keeps the first reading of each resource of rows; with
// canonicalize, its spec is re-encoded canonically (PostgreSQL's jsonb
// reorders keys), so that specs compare byte for byte.
func (st state) add(rows []configdb.Resource, canonicalize bool) {
	for i := range rows {
		r := &rows[i]
		k := config.Kind(r.Kind)
		if st[k] == nil {
			st[k] = map[string]*configdb.Resource{}
		}
		if st[k][r.Key] == nil {
			if canonicalize {
				r.Spec = configdb.JSON(config.Canonical(r.Spec))
			}
			st[k][r.Key] = r
		}
	}
}

// postState is the configuration as it will be after a set of changes: a
// view over the current state with the planned specs laid over it.
type postState struct {
	cur   state
	specs map[string]json.RawMessage // kind/key → planned spec; nil = deleted
	// readable reports the kinds whose resources the answers may name
	// (see referrerPhrases); nil: every kind.
	readable func(config.Kind) bool
	// referrersOf indexes, per referenced kind, the referrers of each of
	// its keys (see referrers): built at the first question about the
	// kind, since a postState is not changed once it is read.
	referrersOf map[config.Kind]map[string][]string
}

func (p *postState) spec(k config.Kind, key string) (json.RawMessage, bool) {
	var ref [64]byte
	if s, ok := p.specs[string(appendRef(ref[:0], k, key))]; ok {
		return s, s != nil
	}
	if r := p.cur.get(k, key); r != nil {
		return json.RawMessage(r.Spec), true
	}
	return nil, false
}

// each calls fn for every resource of kind k in the post-plan state.
func (p *postState) each(k config.Kind, fn func(key string, spec json.RawMessage)) {
	keys := map[string]bool{}
	for key := range p.cur[k] {
		keys[key] = true
	}
	prefix := string(k) + "/"
	for ref := range p.specs {
		if key, ok := strings.CutPrefix(ref, prefix); ok {
			keys[key] = true
		}
	}
	sorted := make([]string, 0, len(keys))
	for key := range keys {
		sorted = append(sorted, key)
	}
	slices.Sort(sorted)
	for _, key := range sorted {
		if s, ok := p.spec(k, key); ok {
			fn(key, s)
		}
	}
}

// referrers lists the post-plan resources that reference kind/key, each
// once, by referencing kind (referencedBy's order) then key. The slice is
// shared: callers only read it.
//
// The resources of the referencing kinds are read once per kind k, into
// an index of every key of k they reference: a plan deleting n resources
// asks n times, and reading them all for each question made the checks of
// a plan that deletes 1,000 apis cost 1,000 × 1,000 visits.
func (p *postState) referrers(k config.Kind, key string) []string {
	idx, ok := p.referrersOf[k]
	if !ok {
		idx = p.indexReferrers(k)
		if p.referrersOf == nil {
			p.referrersOf = map[config.Kind]map[string][]string{}
		}
		p.referrersOf[k] = idx
	}
	return idx[key]
}

// indexReferrers maps each key of kind k that a post-plan resource
// references to the resources referencing it, in referrers' order.
func (p *postState) indexReferrers(k config.Kind) map[string][]string {
	idx := map[string][]string{}
	for _, rk := range referencedBy[k] {
		p.each(rk, func(rkey string, spec json.RawMessage) {
			name := ""
			for _, ref := range config.References(rk, rkey, spec) {
				if ref.Kind != k {
					continue
				}
				if name == "" {
					name = resourceRef(rk, rkey)
				}
				// A referrer naming a key again was appended last.
				if refs := idx[ref.Key]; len(refs) == 0 || refs[len(refs)-1] != name {
					idx[ref.Key] = append(idx[ref.Key], name)
				}
			}
		})
	}
	return idx
}

// resolve checks a reference against the post-plan state: the target
// exists and, for a scope, the API declares it.
func (p *postState) resolve(ref config.Reference) (code config.Code, detail string, ok bool) {
	spec, exists := p.spec(ref.Kind, ref.Key)
	if !exists {
		return config.CodeDanglingReference, string(ref.Kind) + " " + config.QuoteShort(ref.Key) + " does not exist", false
	}
	if ref.Scope != "" && ref.Kind == config.KindAPI && !slices.Contains(config.APIScopes(spec), ref.Scope) {
		return config.CodeUnknownScope, "api " + config.QuoteShort(ref.Key) + " has no scope " + config.QuoteShort(ref.Scope), false
	}
	return "", "", true
}

// tokenWindow is how recent a token makes an application's deletion protected.
const tokenWindow = 30 * 24 * time.Hour

// uniqueHolders maps every unique value of the resources of kind k in the
// post-plan state, as UniqueValue.Key compares them, to the keys that hold
// it, in key order. The key is computed from each spec, not read from
// display_name_key, so that a row whose stored key is missing compares all
// the same.
func (p *postState) uniqueHolders(k config.Kind) map[config.UniqueKey][]string {
	return p.uniqueHoldersOf(k, nil)
}

// plannedValues are the unique values already read from a planned spec.
type plannedValues struct {
	spec   json.RawMessage
	values []config.UniqueValue
}

// uniqueHoldersOf is uniqueHolders, taking the unique values of a resource
// from planned (by kind/key) when they were read from the very spec the
// post-plan state holds for it. UniqueValues depends on the spec's bytes
// only, so bytes.Equal is the whole condition; for the same slice it is a
// pointer comparison. The resources are visited as the maps give them, not
// sorted by key as each does: a spec has one value of a field, so a key
// is at most once in a list, and sorting the few lists of more than one
// gives the key order.
func (p *postState) uniqueHoldersOf(k config.Kind, planned map[string]plannedValues) map[config.UniqueKey][]string {
	out := make(map[config.UniqueKey][]string, len(p.cur[k])+len(planned))
	add := func(key string, us []config.UniqueValue) {
		for _, u := range us {
			out[u.Compared()] = append(out[u.Compared()], key)
		}
	}
	var ref []byte
	for key, r := range p.cur[k] {
		ref = appendRef(ref[:0], k, key)
		if _, planned := p.specs[string(ref)]; !planned {
			add(key, config.UniqueValues(k, json.RawMessage(r.Spec)))
		}
	}
	prefix := string(k) + "/"
	for ref, spec := range p.specs {
		key, ok := strings.CutPrefix(ref, prefix)
		if !ok || spec == nil {
			continue // another kind's, or a deletion
		}
		if pv, known := planned[ref]; known && bytes.Equal(pv.spec, spec) {
			add(key, pv.values)
		} else {
			add(key, config.UniqueValues(k, spec))
		}
	}
	for _, keys := range out {
		if len(keys) > 1 {
			slices.Sort(keys)
		}
	}
	return out
}
