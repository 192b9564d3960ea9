package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	confmodel "github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/federation"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/test/testdb"
)

// runCmd runs keenauthd with args against db and returns its standard output.
func runCmd(t *testing.T, db *testdb.Database, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	getenv := func(k string) string {
		if k == "KEENAUTHD_DATABASE_URL" {
			return db.URL
		}
		return ""
	}
	err := run(context.Background(), args, getenv, &out, &errOut)
	return out.String(), err
}

// TestAdminCommandsCreateAnEnvironmentAndKeysAndRevokeThem: migrate, env
// create, key create and key revoke answer JSON, and a revoked key no
// longer authenticates.
func TestAdminCommandsCreateAnEnvironmentAndKeysAndRevokeThem(t *testing.T) {
	db := testdb.New(t)
	out, err := runCmd(t, db, "migrate")
	if err != nil || strings.TrimSpace(out) != `{"applied":[]}` {
		t.Fatalf("migrate on a migrated database: %q, %v", out, err)
	}
	out, err = runCmd(t, db, "env", "create", "--name", "Shop")
	if err != nil {
		t.Fatal(err)
	}
	var env struct{ ID string }
	if json.Unmarshal([]byte(out), &env) != nil || !confmodel.ValidID(confmodel.PrefixEnvironment, env.ID) {
		t.Fatalf("env create printed %q", out)
	}
	out, err = runCmd(t, db, "key", "create", "--env", env.ID, "--permissions", "config:read,connections:read")
	if err != nil {
		t.Fatal(err)
	}
	var key struct{ ID, Secret string }
	if json.Unmarshal([]byte(out), &key) != nil || !confmodel.ValidID(confmodel.PrefixAPIKey, key.ID) || !strings.HasPrefix(key.Secret, "ksk_") {
		t.Fatalf("key create printed %q", out)
	}
	// This process follows no published revocation: it reads the key every
	// time (test/e2e shows how replicas learn of a revocation).
	pc := plans.DefaultConfig()
	pc.AuthCacheTTL = 0
	svc := plans.New(configdb.New(db.DB, nil, configdb.Options{}), federation.Unconfigured{}, pc, nil, plans.Hooks{})
	a, err := svc.Keys.Authenticate(context.Background(), key.Secret)
	if err != nil || a.EnvironmentID != env.ID || !a.Can([]string{"config:read", "connections:read"}) || a.Can([]string{"config:write"}) || a.Owner != nil {
		t.Fatalf("the new key authenticates as %+v, %v", a, err)
	}
	// --owner records who the key is for (§17); 200 characters are allowed.
	owner := "ana@shop.example " + strings.Repeat("é", 183)
	out, err = runCmd(t, db, "key", "create", "--env", env.ID, "--permissions", "config:read", "--owner", owner)
	if err != nil {
		t.Fatal(err)
	}
	var owned struct{ ID, Secret string }
	_ = json.Unmarshal([]byte(out), &owned)
	if a, err := svc.Keys.Authenticate(context.Background(), owned.Secret); err != nil || a.Owner == nil || *a.Owner != owner {
		t.Fatalf("the key created with --owner authenticates as %+v, %v", a, err)
	}
	if _, err := runCmd(t, db, "key", "revoke", key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Keys.Authenticate(context.Background(), key.Secret); !errors.Is(err, plans.ErrUnauthenticated) {
		t.Fatalf("a revoked key authenticates: %v", err)
	}

	// With --env (before or after the id), the revoke names the environment.
	out, err = runCmd(t, db, "key", "create", "--env", env.ID, "--permissions", "config:read")
	if err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal([]byte(out), &key)
	other := "env_01hzzzzzzzzzzzzzzzzzzzzzzz"
	if _, err := runCmd(t, db, "key", "revoke", key.ID, "--env", other); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("revoking a key with another environment's id: %v, want not found", err)
	}
	if _, err := svc.Keys.Authenticate(context.Background(), key.Secret); err != nil {
		t.Fatalf("a key revoked under another environment no longer authenticates: %v", err)
	}
	if _, err := runCmd(t, db, "key", "revoke", "--env", env.ID, key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Keys.Authenticate(context.Background(), key.Secret); !errors.Is(err, plans.ErrUnauthenticated) {
		t.Fatalf("a key revoked with --env authenticates: %v", err)
	}
}

// TestAdminCommandsRefuseBadInput: usage mistakes exit 2, refused values 1,
// and nothing is created.
func TestAdminCommandsRefuseBadInput(t *testing.T) {
	db := testdb.New(t)
	out, err := runCmd(t, db, "env", "create", "--name", "Shop")
	if err != nil {
		t.Fatal(err)
	}
	var env struct{ ID string }
	_ = json.Unmarshal([]byte(out), &env)
	cases := []struct {
		args []string
		exit int
		says string
	}{
		{nil, 2, "no command"},
		{[]string{"bogus"}, 2, "unknown command"},
		{[]string{"env", "create"}, 2, "--name"},
		{[]string{"key", "create", "--env", env.ID}, 2, "--permissions"},
		{[]string{"key", "create", "--env", env.ID, "--permissions", "config:read,nope:write"}, 1, `unknown permission "nope:write"`},
		{[]string{"key", "create", "--env", "env_01hzzzzzzzzzzzzzzzzzzzzzzz", "--permissions", "config:read"}, 1, "not found"},
		{[]string{"key", "create", "--env", env.ID, "--permissions", "config:read", "--owner", ""}, 2, "the owner is empty"},
		{[]string{"key", "create", "--env", env.ID, "--permissions", "config:read", "--owner", strings.Repeat("é", 201)}, 2, "201 characters"},
		{[]string{"key", "create", "--env", env.ID, "--permissions", "config:read", "--owner", "ana\n@shop.example"}, 2, "U+000A"},
		{[]string{"key", "create", "--env", env.ID, "--permissions", "config:read", "--owner", "ana\x7f"}, 2, "U+007F"},
		{[]string{"key", "revoke"}, 2, "KEY_ID"},
		{[]string{"key", "revoke", "key_01hzzzzzzzzzzzzzzzzzzzzzzz"}, 1, "not found"},
		{[]string{"key", "revoke", "key_01hzzzzzzzzzzzzzzzzzzzzzzz", "key_01hzzzzzzzzzzzzzzzzzzzzzzy"}, 2, "KEY_ID"},
	}
	for _, tc := range cases {
		_, err := runCmd(t, db, tc.args...)
		if err == nil || exitCode(err) != tc.exit || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("keenauthd %v: exit %d, %v; want exit %d saying %q", tc.args, exitCode(err), err, tc.exit, tc.says)
		}
	}
	var keys int64
	db.DB.Table("api_keys").Count(&keys)
	if keys != 0 {
		t.Errorf("%d keys were created by refused commands", keys)
	}
}
