package federation

import (
	"context"
	"slices"
	"sync"
)

// InProcess is the federation service of dev mode (`keenauthd dev`): it
// accepts any material that CheckMaterial finds well formed, keeps it in
// memory, and passes every test of stored material. It never keeps a
// secret, only that one was set. It is safe for concurrent use.
type InProcess struct {
	mu     sync.Mutex
	stored map[connectionRef]Stored
}

type connectionRef struct{ env, connectionID string }

// NewInProcess returns an empty InProcess.
func NewInProcess() *InProcess {
	return &InProcess{stored: map[connectionRef]Stored{}}
}

// PutOIDC stores the material, or answers a *RejectedError listing every
// way it is not well formed.
func (p *InProcess) PutOIDC(ctx context.Context, env, connectionID string, m Material, clientSecret string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkIDs(env, connectionID); err != nil {
		return err
	}
	if errs := CheckMaterial(m, clientSecret); len(errs) > 0 {
		return &RejectedError{Errors: errs}
	}
	m.Scopes = slices.Clone(m.Scopes)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stored[connectionRef{env, connectionID}] = Stored{Material: m, SecretSet: true}
	return nil
}

// GetOIDC returns the stored material, or ErrNotFound.
func (p *InProcess) GetOIDC(ctx context.Context, env, connectionID string) (Stored, error) {
	if err := ctx.Err(); err != nil {
		return Stored{}, err
	}
	s, ok := p.lookup(env, connectionID)
	if !ok {
		return Stored{}, ErrNotFound
	}
	return s, nil
}

// TestOIDC succeeds for any stored material, and answers ErrNotFound when
// there is none.
func (p *InProcess) TestOIDC(ctx context.Context, env, connectionID string) (bool, *string, error) {
	if err := ctx.Err(); err != nil {
		return false, nil, err
	}
	if _, ok := p.lookup(env, connectionID); !ok {
		return false, nil, ErrNotFound
	}
	return true, nil, nil
}

func (p *InProcess) lookup(env, connectionID string) (Stored, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.stored[connectionRef{env, connectionID}]
	s.Scopes = slices.Clone(s.Scopes)
	return s, ok
}
