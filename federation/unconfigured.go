package federation

import (
	"context"
	"fmt"
)

// Unconfigured is the Client of a keenauthd that has no federation service
// (serve without KEENAUTHD_FEDERATION_URL): every call answers
// ErrUnavailable, and Configured reports false, so that the domain refuses
// what needs the service before it writes anything.
type Unconfigured struct{}

var errUnconfigured = fmt.Errorf("%w: no federation service is configured", ErrUnavailable)

// PutOIDC answers ErrUnavailable.
func (Unconfigured) PutOIDC(context.Context, string, string, Material, string) error {
	return errUnconfigured
}

// GetOIDC answers ErrUnavailable.
func (Unconfigured) GetOIDC(context.Context, string, string) (Stored, error) {
	return Stored{}, errUnconfigured
}

// TestOIDC answers ErrUnavailable.
func (Unconfigured) TestOIDC(context.Context, string, string) (bool, *string, error) {
	return false, nil, errUnconfigured
}

// Configured reports whether c reaches a federation service: false for
// Unconfigured.
func Configured(c Client) bool {
	_, none := c.(Unconfigured)
	return !none
}
