package plans

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
)

// referencedBy lists, per kind, the kinds whose specs can reference it.
var referencedBy = map[Kind][]Kind{
	KindAPI:         {KindRole, KindApplication},
	KindConnection:  {KindApplication},
	KindApplication: {KindApplicationBranding},
}

// referencingTypes are the types outside planned that reference a planned type.
func referencingTypes(planned []Kind) []Kind {
	in := map[Kind]bool{}
	for _, k := range planned {
		in[k] = true
	}
	var out []Kind
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

func sortKinds(ks []Kind) {
	slices.SortFunc(ks, func(a, b Kind) int { return WriteOrder(a) - WriteOrder(b) })
}

// state is the configuration of an environment for a set of kinds.
type state map[Kind]map[string]*Resource

func (st state) get(k Kind, key string) *Resource {
	if m := st[k]; m != nil {
		return m[key]
	}
	return nil
}

func loadState(ctx context.Context, tx *gorm.DB, envID string, kinds []Kind) (state, error) {
	st := state{}
	for _, k := range kinds {
		st[k] = map[string]*Resource{}
	}
	if len(kinds) == 0 {
		return st, nil
	}
	var rows []Resource
	if err := tx.WithContext(ctx).Where("environment_id = ? AND kind IN ?", envID, kinds).Find(&rows).Error; err != nil {
		return nil, interpretError(err)
	}
	for i := range rows {
		r := &rows[i]
		r.Spec = JSON(canonical(r.Spec))
		st[r.Kind][r.Key] = r
	}
	return st, nil
}

func loadGenerations(ctx context.Context, tx *gorm.DB, envID string, kinds []Kind) (map[Kind]int64, error) {
	out := map[Kind]int64{}
	if len(kinds) == 0 {
		return out, nil
	}
	var rows []TypeState
	if err := tx.WithContext(ctx).Where("environment_id = ? AND kind IN ?", envID, kinds).Find(&rows).Error; err != nil {
		return nil, interpretError(err)
	}
	for _, r := range rows {
		out[r.Kind] = r.Generation
	}
	return out, nil
}

// postState is the configuration as it will be after a set of changes: a
// view over the current state with the planned specs laid over it.
type postState struct {
	cur   state
	specs map[string]json.RawMessage // kind/key → planned spec; nil = deleted
}

func (p *postState) spec(k Kind, key string) (json.RawMessage, bool) {
	if s, ok := p.specs[resourceRef(k, key)]; ok {
		return s, s != nil
	}
	if r := p.cur.get(k, key); r != nil {
		return json.RawMessage(r.Spec), true
	}
	return nil, false
}

// each calls fn for every resource of kind k in the post-plan state.
func (p *postState) each(k Kind, fn func(key string, spec json.RawMessage)) {
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

// referrers lists the post-plan resources that reference kind/key.
func (p *postState) referrers(k Kind, key string) []string {
	var out []string
	for _, rk := range referencedBy[k] {
		p.each(rk, func(rkey string, spec json.RawMessage) {
			for _, ref := range References(rk, rkey, spec) {
				if ref.Kind == k && ref.Key == key {
					out = append(out, resourceRef(rk, rkey))
					return
				}
			}
		})
	}
	return out
}

// resolve checks a reference against the post-plan state: the target
// exists and, for a scope, the API declares it.
func (p *postState) resolve(ref Reference) (code Code, detail string, ok bool) {
	spec, exists := p.spec(ref.Kind, ref.Key)
	if !exists {
		return CodeDanglingReference, string(ref.Kind) + " " + quoteShort(ref.Key) + " does not exist", false
	}
	if ref.Scope != "" && ref.Kind == KindAPI && !slices.Contains(APIScopes(spec), ref.Scope) {
		return CodeUnknownScope, "api " + quoteShort(ref.Key) + " has no scope " + quoteShort(ref.Scope), false
	}
	return "", "", true
}

// policies returns the environment's policies.
func loadPolicies(ctx context.Context, tx *gorm.DB, envID string) (Policies, error) {
	var row policyRow
	err := interpretError(tx.WithContext(ctx).Where("environment_id = ?", envID).Take(&row).Error)
	if isNotFound(err) {
		return Policies{}, nil
	}
	if err != nil {
		return Policies{}, err
	}
	var p Policies
	if err := json.Unmarshal(row.Policies, &p); err != nil {
		return Policies{}, err
	}
	return p, nil
}

// recentTokens returns the applications of keys that received a token
// since the given time.
func recentTokens(ctx context.Context, tx *gorm.DB, envID string, keys []string, since time.Time) (map[string]bool, error) {
	out := map[string]bool{}
	if len(keys) == 0 {
		return out, nil
	}
	var rows []tokenActivityRow
	err := tx.WithContext(ctx).Where("environment_id = ? AND application_key IN ? AND last_issued_at > ?", envID, keys, since).Find(&rows).Error
	if err != nil {
		return nil, interpretError(err)
	}
	for _, r := range rows {
		out[r.ApplicationKey] = true
	}
	return out, nil
}

// tokenWindow is how recent a token makes an application's deletion protected.
const tokenWindow = 30 * 24 * time.Hour

// oidcMaterial is the OIDC member of an enterprise connection spec.
type oidcMaterial struct {
	Issuer   string   `json:"issuer"`
	ClientID string   `json:"client_id"`
	Scopes   []string `json:"scopes"`
}

type connectionView struct {
	Type   string          `json:"type"`
	Active bool            `json:"active"`
	OIDC   json.RawMessage `json:"oidc"`
	Social *struct {
		Provider          string `json:"provider"`
		UseOwnCredentials bool   `json:"use_own_credentials"`
		ClientID          string `json:"client_id"`
	} `json:"social"`
}

func viewConnection(spec json.RawMessage) connectionView {
	var v connectionView
	_ = json.Unmarshal(spec, &v)
	if string(v.OIDC) == "null" {
		v.OIDC = nil
	}
	return v
}

// materialHash identifies a connection's OIDC material (never its secret).
func materialHash(oidc json.RawMessage) string {
	sum := sha256.Sum256(canonical(oidc))
	return hex.EncodeToString(sum[:])
}

// SecretRef names the client secret of a connection.
func SecretRef(key string) string {
	return "KEENAUTH_CONNECTION_" + strings.ToUpper(strings.ReplaceAll(key, "-", "_")) + "_CLIENT_SECRET"
}

// confirmedMaterial returns, per connection id, the hash of the material the
// federation service confirmed.
func confirmedMaterial(ctx context.Context, tx *gorm.DB, envID string) (map[string]string, error) {
	var rows []struct {
		ConnectionID string
		MaterialHash string
	}
	err := tx.WithContext(ctx).Table("connection_materials").Select("connection_id, material_hash").
		Where("environment_id = ?", envID).Find(&rows).Error
	if err != nil {
		return nil, interpretError(err)
	}
	out := map[string]string{}
	for _, r := range rows {
		out[r.ConnectionID] = r.MaterialHash
	}
	return out, nil
}
