package plans

import (
	"context"
	"fmt"
	"strings"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/guardrails"
)

// Environment is a tenant environment, as stored.
type Environment = configdb.Environment

// Environments are the tenant environments: their creation and lookup,
// their policies, and the token activity their applications report
// (tokens.go), which the planner reads to ask for deletion confirmations.
type Environments struct{ core }

// CreateEnvironment creates an environment with its four singletons at
// version 1 holding the defaults of §4.
func (s *Environments) CreateEnvironment(ctx context.Context, name string) (Environment, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 128 {
		return Environment{}, config.Errorf(config.CodeValidationFailed, "the environment name must have 1 to 128 characters")
	}
	env := Environment{ID: config.NewID(config.PrefixEnvironment), Name: name}
	var singletons []configdb.Resource
	for kind, spec := range config.DefaultSingletons(name) {
		singletons = append(singletons, configdb.Resource{Kind: string(kind), Key: config.SingletonKey, Version: 1, Spec: configdb.JSON(spec)})
	}
	kinds := make([]string, len(config.Kinds))
	for i, k := range config.Kinds {
		kinds[i] = string(k.Kind)
	}
	err := s.db.Write(ctx, func(tx *configdb.Tx) error {
		return tx.CreateEnvironment(ctx, &env, singletons, kinds)
	})
	return env, err
}

// FindEnvironment returns the oldest environment named name (ErrNotFound
// when there is none).
func (s *Environments) FindEnvironment(ctx context.Context, name string) (Environment, error) {
	return s.db.FindEnvironment(ctx, name)
}

// requireEnvironment answers not_found for an environment that does not
// exist.
func (s *Environments) requireEnvironment(ctx context.Context, envID string) error {
	ok, err := s.db.EnvironmentExists(ctx, envID)
	if err != nil {
		return err
	}
	if !ok {
		return &config.Error{Code: config.CodeNotFound, Detail: "no such environment"}
	}
	return nil
}

// PutPolicies replaces the policies of an environment.
func (s *Environments) PutPolicies(ctx context.Context, envID string, body []byte) (config.Policies, error) {
	if !config.ValidID(config.PrefixEnvironment, envID) {
		return config.Policies{}, &config.Error{Code: config.CodeNotFound, Detail: "no such environment"}
	}
	p, problems, err := config.DecodePolicies(body)
	if err != nil {
		return config.Policies{}, err
	}
	problems = append(problems, guardrails.Check(p.Rules)...)
	if p.Rules == nil {
		p.Rules = []config.Rule{} // stored and answered as a list
	}
	if len(problems) > 0 {
		return config.Policies{}, config.Problems(config.CodeValidationFailed, problems)
	}
	if err := s.requireEnvironment(ctx, envID); err != nil {
		return config.Policies{}, err
	}
	err = s.db.Write(ctx, func(tx *configdb.Tx) error { return tx.PutPolicies(ctx, envID, config.MustJSON(p)) })
	if err != nil {
		return config.Policies{}, fmt.Errorf("policies: %w", err)
	}
	return p, nil
}
