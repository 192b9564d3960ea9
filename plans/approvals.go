package plans

import (
	"context"

	"github.com/keenauth/configplans/config"
)

// ConfigPolicies is what GET /v1/config-policies answers (§17): every
// policy of the environment with its value or its default, and the rules
// of §18 (none yet: this service has no rules, so the list is empty).
type ConfigPolicies struct {
	Object string `json:"object"`
	config.Policies
	Rules []any `json:"rules"`
}

// GetPolicies returns the policies in force in the actor's environment.
// It needs config:read.
func (s *Service) GetPolicies(ctx context.Context, a Actor) (ConfigPolicies, error) {
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
	return ConfigPolicies{Object: "config_policies", Policies: p, Rules: []any{}}, nil
}
