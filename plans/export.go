package plans

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
)

// Export is the current configuration of some types as a document.
type Export struct {
	Config   map[string]json.RawMessage `json:"config"`
	Versions map[string]int             `json:"versions"`
}

// ParseTypes parses the types query parameter (kind names, comma
// separated); empty means every type.
func ParseTypes(param string, present bool) ([]config.Kind, error) {
	if !present {
		out := make([]config.Kind, len(config.Kinds))
		for i, k := range config.Kinds {
			out[i] = k.Kind
		}
		return out, nil
	}
	var out []config.Kind
	for _, name := range strings.Split(param, ",") {
		name = strings.TrimSpace(name)
		if _, ok := config.LookupKind(config.Kind(name)); !ok {
			return nil, &config.Error{Code: config.CodeMalformedRequest, Detail: "types lists resource types such as connection,api; unknown type " + config.QuoteShort(name)}
		}
		if !slices.Contains(out, config.Kind(name)) {
			out = append(out, config.Kind(name))
		}
	}
	sortKinds(out)
	return out, nil
}

// ExportConfig returns the configuration of kinds: a valid plan input.
func (s *Reads) ExportConfig(ctx context.Context, a Actor, kinds []config.Kind) (*Export, error) {
	if err := a.Require(readPerms(kinds, config.PermConfigRead)...); err != nil {
		return nil, err
	}
	rows, err := s.db.LoadKinds(ctx, a.EnvironmentID, kindStrings(kinds))
	if err != nil {
		return nil, err
	}
	st := state{}
	for _, k := range kinds {
		st[k] = map[string]*configdb.Resource{}
	}
	st.add(rows, true)
	ex := &Export{Config: map[string]json.RawMessage{}, Versions: map[string]int{}}
	for _, k := range kinds {
		info, _ := config.LookupKind(k)
		if info.Singleton {
			if r := st.get(k, config.SingletonKey); r != nil {
				ex.Config[info.DocKey] = json.RawMessage(r.Spec)
				ex.Versions[resourceRef(k, config.SingletonKey)] = r.Version
			}
			continue
		}
		m := map[string]json.RawMessage{}
		for key, r := range st[k] {
			m[key] = json.RawMessage(r.Spec)
			ex.Versions[resourceRef(k, key)] = r.Version
		}
		ex.Config[info.DocKey] = config.MustJSON(m)
	}
	return ex, nil
}
