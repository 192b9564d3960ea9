package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/test/testdb"
)

// The pair reference writes, through HTTP, what the bound writes for a
// plan and its apply, each apply on the resource's version the last one
// left; after a reset it reads the resource again, which another loop
// changed since (without the reset its update would match no row).
func TestPairReferenceWritesTheBoundsPlanAndApply(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t)
	db := configdb.New(d.DB, nil, configdb.Options{})
	ek := envKey{EnvID: "env_pairref", KeyID: "key_pairref", Secret: "ka_pairref_secret"}
	err := db.Write(ctx, func(tx *configdb.Tx) error {
		err := tx.CreateEnvironment(ctx, &configdb.Environment{ID: ek.EnvID, Name: "pairref"},
			[]configdb.Resource{{Kind: "api", Key: "bench", Version: 1, Spec: configdb.JSON(canonicalJSON(smallSpec("bench", 0)))}}, []string{"api"})
		if err != nil {
			return err
		}
		return tx.CreateAPIKey(ctx, &configdb.APIKey{EnvironmentID: ek.EnvID, ID: ek.KeyID, SecretHash: []byte("not a hash"), Permissions: configdb.JSON(`["*"]`)})
	})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, d.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	srv := httptest.NewServer(newPairRef(&bound{pool: pool}, []envKey{ek}))
	defer srv.Close()
	client := newAPI(srv.URL, 2)

	pair := func(v int) {
		t.Helper()
		p, _, err := client.plan(ctx, ek, apisDocument(map[string]map[string]any{"bench": smallSpec("bench", v)}))
		if err != nil || p.Summary.Update != 1 || p.ID == "" {
			t.Fatalf("plan %d: %+v, %v", v, p, err)
		}
		if _, err := client.apply(ctx, ek, p.ID, ""); err != nil {
			t.Fatal(err)
		}
	}
	state := func() (version int, spec string, applied, revisions, events int) {
		t.Helper()
		err := pool.QueryRow(ctx, `SELECT (SELECT version FROM resources WHERE environment_id = $1 AND kind = 'api' AND key = 'bench'),
			(SELECT spec::text FROM resources WHERE environment_id = $1 AND kind = 'api' AND key = 'bench'),
			(SELECT count(*) FROM config_plans WHERE environment_id = $1 AND status = 'applied'),
			(SELECT count(*) FROM config_revisions WHERE environment_id = $1),
			(SELECT count(*) FROM plan_events WHERE environment_id = $1)`, ek.EnvID).Scan(&version, &spec, &applied, &revisions, &events)
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	specOf := func(v int) string {
		t.Helper()
		var s string
		if err := pool.QueryRow(ctx, `SELECT $1::jsonb::text`, string(canonicalJSON(smallSpec("bench", v)))).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}

	for v := 1; v <= 3; v++ {
		pair(v)
	}
	// Three plans applied, each with a revision and three events
	// (plan_created, apply_started, apply_succeeded).
	if version, spec, applied, revisions, events := state(); version != 4 || spec != specOf(3) || applied != 3 || revisions != 3 || events != 9 {
		t.Fatalf("after three pairs: version %d, spec of the last %v, %d applied, %d revisions, %d events", version, spec == specOf(3), applied, revisions, events)
	}

	// Another loop updates the api behind the reference's back.
	if _, err := pool.Exec(ctx, `UPDATE resources SET version = version + 5 WHERE environment_id = $1 AND key = 'bench'`, ek.EnvID); err != nil {
		t.Fatal(err)
	}
	if err := resetPairReference(ctx, client); err != nil {
		t.Fatal(err)
	}
	pair(4)
	if version, spec, applied, _, _ := state(); version != 10 || spec != specOf(4) || applied != 4 {
		t.Fatalf("after the reset: version %d (want 10), spec of the last %v, %d applied", version, spec == specOf(4), applied)
	}

	// No key, no answer; no plan, no apply.
	if r, err := client.do(ctx, http.MethodPost, "/v1/config-plans", "ka_unknown", apisDocument(map[string]map[string]any{"bench": smallSpec("bench", 5)}), nil); err != nil || r.status != http.StatusUnauthorized {
		t.Errorf("unknown key: %d, %v", r.status, err)
	}
	if r, err := client.do(ctx, http.MethodPost, "/v1/config-plans/cfgp_none:apply", ek.Secret, []byte("{}"), nil); err != nil || r.status != http.StatusNotFound {
		t.Errorf("unknown plan: %d, %v", r.status, err)
	}
}
