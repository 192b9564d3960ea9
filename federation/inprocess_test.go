package federation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func testMaterial() Material {
	return Material{
		Issuer:      "https://idp.acme.example",
		ClientID:    "abc",
		Scopes:      []string{"openid", "email"},
		RedirectURI: "https://login.shop.example/sso/con_1/callback",
	}
}

func TestInProcessPutGetTest(t *testing.T) {
	t.Parallel()
	p := NewInProcess()
	ctx := context.Background()

	if _, err := p.GetOIDC(ctx, "env_1", "con_1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetOIDC before PutOIDC: err = %v, want ErrNotFound", err)
	}
	if _, _, err := p.TestOIDC(ctx, "env_1", "con_1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("TestOIDC before PutOIDC: err = %v, want ErrNotFound", err)
	}
	if err := p.PutOIDC(ctx, "env_1", "con_1", testMaterial(), "s3cr3t-value"); err != nil {
		t.Fatalf("PutOIDC: %v", err)
	}
	got, err := p.GetOIDC(ctx, "env_1", "con_1")
	if err != nil {
		t.Fatalf("GetOIDC: %v", err)
	}
	if diff := cmp.Diff(Stored{Material: testMaterial(), SecretSet: true}, got); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
	ok, reason, err := p.TestOIDC(ctx, "env_1", "con_1")
	if err != nil || !ok || reason != nil {
		t.Errorf("TestOIDC = %v, %v, %v; want true, nil, nil", ok, reason, err)
	}
	// Material is per environment and connection.
	if _, err := p.GetOIDC(ctx, "env_2", "con_1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("another environment: err = %v, want ErrNotFound", err)
	}
}

func TestInProcessReplacesMaterial(t *testing.T) {
	t.Parallel()
	p := NewInProcess()
	ctx := context.Background()
	m := testMaterial()
	if err := p.PutOIDC(ctx, "env_1", "con_1", m, "one"); err != nil {
		t.Fatal(err)
	}
	m.ClientID = "def"
	if err := p.PutOIDC(ctx, "env_1", "con_1", m, "two"); err != nil {
		t.Fatal(err)
	}
	got, _ := p.GetOIDC(ctx, "env_1", "con_1")
	if got.ClientID != "def" {
		t.Errorf("client_id = %q, want the second write", got.ClientID)
	}
}

func TestInProcessNeverKeepsTheSecret(t *testing.T) {
	t.Parallel()
	p := NewInProcess()
	const secret = "canary-s3cr3t-ZXY"
	if err := p.PutOIDC(context.Background(), "env_1", "con_1", testMaterial(), secret); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	dump := fmt.Sprintf("%#v", p.stored)
	p.mu.Unlock()
	if strings.Contains(dump, secret) {
		t.Errorf("the stand-in keeps the secret: %s", dump)
	}
}

func TestInProcessRejectsMalformedMaterial(t *testing.T) {
	t.Parallel()
	p := NewInProcess()
	ctx := context.Background()
	bad := Material{Issuer: "http://idp.acme.example", Scopes: []string{"email"}, RedirectURI: "ftp://x"}

	err := p.PutOIDC(ctx, "env_1", "con_1", bad, "")
	var rej *RejectedError
	if !errors.As(err, &rej) {
		t.Fatalf("err = %v, want a *RejectedError", err)
	}
	want := []FieldError{
		{Pointer: "/issuer", Code: "invalid"},
		{Pointer: "/client_id", Code: "required"},
		{Pointer: "/client_secret", Code: "required"},
		{Pointer: "/scopes", Code: "openid_required"},
		{Pointer: "/redirect_uri", Code: "invalid"},
	}
	if diff := cmp.Diff(want, rej.Errors); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if _, err := p.GetOIDC(ctx, "env_1", "con_1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("rejected material was stored: err = %v", err)
	}
}

func TestInProcessCopiesScopes(t *testing.T) {
	t.Parallel()
	p := NewInProcess()
	ctx := context.Background()
	m := testMaterial()
	if err := p.PutOIDC(ctx, "env_1", "con_1", m, "s"); err != nil {
		t.Fatal(err)
	}
	m.Scopes[1] = "changed-by-caller"
	got, _ := p.GetOIDC(ctx, "env_1", "con_1")
	got.Scopes[0] = "changed-by-reader"
	again, _ := p.GetOIDC(ctx, "env_1", "con_1")
	if diff := cmp.Diff([]string{"openid", "email"}, again.Scopes); diff != "" {
		t.Errorf("scopes (-want +got):\n%s", diff)
	}
}

func TestInProcessRefusesDoneContextAndEmptyIDs(t *testing.T) {
	t.Parallel()
	p := NewInProcess()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.PutOIDC(ctx, "env_1", "con_1", testMaterial(), "s"); !errors.Is(err, context.Canceled) {
		t.Errorf("PutOIDC: err = %v, want context.Canceled", err)
	}
	if _, err := p.GetOIDC(ctx, "env_1", "con_1"); !errors.Is(err, context.Canceled) {
		t.Errorf("GetOIDC: err = %v, want context.Canceled", err)
	}
	if _, _, err := p.TestOIDC(ctx, "env_1", "con_1"); !errors.Is(err, context.Canceled) {
		t.Errorf("TestOIDC: err = %v, want context.Canceled", err)
	}
	if err := p.PutOIDC(context.Background(), "", "con_1", testMaterial(), "s"); err == nil {
		t.Error("PutOIDC with an empty environment succeeded")
	}
}

func TestInProcessConcurrentUse(t *testing.T) {
	t.Parallel()
	p := NewInProcess()
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			con := fmt.Sprintf("con_%d", i%4)
			for range 50 {
				if err := p.PutOIDC(ctx, "env_1", con, testMaterial(), "s"); err != nil {
					t.Error(err)
					return
				}
				if _, err := p.GetOIDC(ctx, "env_1", con); err != nil {
					t.Error(err)
					return
				}
				if _, _, err := p.TestOIDC(ctx, "env_1", con); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestCheckMaterial(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		edit   func(*Material)
		secret string
		want   []FieldError
	}{
		{"well formed", func(*Material) {}, "s", nil},
		{"issuer missing", func(m *Material) { m.Issuer = "" }, "s", []FieldError{{"/issuer", "required"}}},
		{"issuer http", func(m *Material) { m.Issuer = "http://idp.example" }, "s", []FieldError{{"/issuer", "invalid"}}},
		{"issuer without host", func(m *Material) { m.Issuer = "https://:443/x" }, "s", []FieldError{{"/issuer", "invalid"}}},
		{"issuer relative", func(m *Material) { m.Issuer = "idp.example" }, "s", []FieldError{{"/issuer", "invalid"}}},
		{"issuer with user info", func(m *Material) { m.Issuer = "https://u:p@idp.example" }, "s", []FieldError{{"/issuer", "invalid"}}},
		{"issuer unparseable", func(m *Material) { m.Issuer = "https://idp example/%zz" }, "s", []FieldError{{"/issuer", "invalid"}}},
		{"client id missing", func(m *Material) { m.ClientID = "" }, "s", []FieldError{{"/client_id", "required"}}},
		{"secret missing", func(*Material) {}, "", []FieldError{{"/client_secret", "required"}}},
		{"no scopes", func(m *Material) { m.Scopes = nil }, "s", []FieldError{{"/scopes", "openid_required"}}},
		{"scopes without openid", func(m *Material) { m.Scopes = []string{"OpenID"} }, "s", []FieldError{{"/scopes", "openid_required"}}},
		{"redirect missing", func(m *Material) { m.RedirectURI = "" }, "s", []FieldError{{"/redirect_uri", "required"}}},
		{"redirect http", func(m *Material) { m.RedirectURI = "http://localhost/cb" }, "s", []FieldError{{"/redirect_uri", "invalid"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := testMaterial()
			tt.edit(&m)
			if diff := cmp.Diff(tt.want, CheckMaterial(m, tt.secret)); diff != "" {
				t.Errorf("CheckMaterial (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRejectedErrorMessage(t *testing.T) {
	t.Parallel()
	err := &RejectedError{Errors: []FieldError{{"", "invalid"}, {"/issuer", "required"}}}
	if want := "federation service rejected the OIDC material: (material) invalid, /issuer required"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}
