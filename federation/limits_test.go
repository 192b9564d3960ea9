package federation_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/federation"
)

// TestPutOIDC422KeepsAtMost100DistinctErrors: a 422 of thousands of
// problems, each repeated, keeps the first 100 distinct ones and says it
// left the others out (§23); a smaller one only drops its repeats.
func TestPutOIDC422KeepsAtMost100DistinctErrors(t *testing.T) {
	t.Parallel()
	srv, c := setup(t, federation.HTTPConfig{})
	var sent []federation.FieldError
	for i := range 3000 {
		fe := federation.FieldError{Pointer: fmt.Sprintf("/scopes/%d", i), Code: "invalid"}
		sent = append(sent, fe, fe)
	}
	srv.Next(1).Reject(sent...)
	var rej *federation.RejectedError
	if err := c.PutOIDC(context.Background(), env, con, material, secret); !errors.As(err, &rej) {
		t.Fatalf("err = %v, want a *RejectedError", err)
	}
	want := make([]federation.FieldError, 0, federation.MaxRejectedErrors)
	for i := 0; len(want) < federation.MaxRejectedErrors; i += 2 {
		want = append(want, sent[i])
	}
	if d := cmp.Diff(want, rej.Errors); d != "" || !rej.Truncated {
		t.Errorf("truncated %v, errors (-want +got):\n%s", rej.Truncated, d)
	}

	srv.Next(1).Reject(sent[:20]...)
	if err := c.PutOIDC(context.Background(), env, con, material, secret); !errors.As(err, &rej) || len(rej.Errors) != 10 || rej.Truncated {
		t.Errorf("10 problems twice: %v", err)
	}
}
