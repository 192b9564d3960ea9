package configdb_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/migrations"
	"github.com/keenauth/configplans/test/testdb"
)

// TestLoadSpecsReadsWhatLoadResourcesReads holds the hand-scanned read of
// a revision diff to GORM's read of the same rows, on PostgreSQL and on
// SQLite: whole kinds, single keys (on PostgreSQL more than one statement
// holds, so that they take several; SQLite under the race detector is too
// slow for as many), keys of no resource and a kind of none.
func TestLoadSpecsReadsWhatLoadResourcesReads(t *testing.T) {
	t.Parallel()
	sqlite := func(t *testing.T) *gorm.DB {
		db := openSQLite(t)
		if _, err := migrations.UpSQLite(context.Background(), db); err != nil {
			t.Fatal(err)
		}
		return db
	}
	for name, c := range map[string]struct {
		open func(*testing.T) *gorm.DB
		n    int
	}{
		"postgres": {func(t *testing.T) *gorm.DB { return testdb.New(t).DB }, 6500},
		"sqlite":   {sqlite, 600},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g, n := c.open(t), c.n
			now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			for _, env := range []string{"env_a", "env_b"} {
				if err := g.Create(&configdb.Environment{ID: env, Name: env, CreatedAt: now}).Error; err != nil {
					t.Fatal(err)
				}
			}
			var rows []configdb.Resource
			for i := range n {
				kind := []string{"api", "role", "application"}[i%3]
				spec := fmt.Sprintf(`{"n": %d, "name": "r\u00e9 %d", "list": [1, {"b": "x", "a": null}]}`, i, i)
				if i%7 == 0 {
					spec = `{}`
				}
				rows = append(rows, configdb.Resource{EnvironmentID: "env_a", Kind: kind, Key: fmt.Sprintf("k-%05d", i), Version: i%5 + 1,
					Spec: configdb.JSON(spec), CreatedAt: now, UpdatedAt: now})
			}
			rows = append(rows, configdb.Resource{EnvironmentID: "env_b", Kind: "api", Key: "k-00000", Version: 9, Spec: configdb.JSON(`{"other": true}`),
				CreatedAt: now, UpdatedAt: now})
			if err := g.CreateInBatches(rows, 500).Error; err != nil {
				t.Fatal(err)
			}
			db := configdb.New(g, func() time.Time { return now }, configdb.Options{})
			var keys [][2]string
			for i := 0; i < n+100; i++ {
				if i%3 != 0 { // the apis are read whole
					keys = append(keys, [2]string{[]string{"api", "role", "application"}[i%3], fmt.Sprintf("k-%05d", i)})
				}
			}
			keys = append(keys, [2]string{"role", "nope"}, [2]string{"connection", "k-00001"})
			kinds := []string{"api", "policy"}
			ctx := context.Background()
			got, err := db.LoadSpecs(ctx, "env_a", kinds, keys)
			if err != nil {
				t.Fatal(err)
			}
			want, err := db.LoadResources(ctx, "env_a", configdb.Selection{Kinds: kinds, Keys: keys})
			if err != nil {
				t.Fatal(err)
			}
			line := func(r configdb.Resource) string {
				return fmt.Sprintf("%s/%s v%d %s", r.Kind, r.Key, r.Version, r.Spec)
			}
			var g1, w1 []string
			for _, r := range got {
				if r.EnvironmentID != "" || r.ResourceID != "" || !r.CreatedAt.IsZero() {
					t.Fatalf("LoadSpecs set more than the four columns: %+v", r)
				}
				g1 = append(g1, line(r))
			}
			for _, r := range want {
				w1 = append(w1, line(r))
			}
			slices.Sort(g1)
			slices.Sort(w1)
			if len(w1) != n || !slices.Equal(g1, w1) {
				t.Fatalf("LoadSpecs read %d rows, LoadResources %d; first difference:\n%s", len(g1), len(w1), firstDifference(g1, w1))
			}
			if none, err := db.LoadSpecs(ctx, "env_a", nil, nil); err != nil || len(none) != 0 {
				t.Fatalf("LoadSpecs of nothing = %v, %v", none, err)
			}
		})
	}
}

func firstDifference(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i] + "\n" + b[i]
		}
	}
	return strings.Join(append(a[min(len(a), len(b)):], b[min(len(a), len(b)):]...), "\n")
}

// benchSpecsDB is a PostgreSQL database holding 1,000 api specs of P10's
// size.
func benchSpecsDB(b *testing.B) *configdb.DB {
	g := testdb.New(b).DB
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := g.Create(&configdb.Environment{ID: "env_a", Name: "env_a", CreatedAt: now}).Error; err != nil {
		b.Fatal(err)
	}
	var rows []configdb.Resource
	for i := range 1000 {
		spec := fmt.Sprintf(`{"identifier": "https://api.bench.example/r-%05d", "scopes": [{"value": "items-00:read", "description": "%s"}]}`, i, strings.Repeat("d", 500))
		rows = append(rows, configdb.Resource{EnvironmentID: "env_a", Kind: "api", Key: fmt.Sprintf("r-%05d", i), Version: 2,
			Spec: configdb.JSON(spec), CreatedAt: now, UpdatedAt: now})
	}
	if err := g.CreateInBatches(rows, 500).Error; err != nil {
		b.Fatal(err)
	}
	return configdb.New(g, func() time.Time { return now }, configdb.Options{})
}

func BenchmarkLoadSpecs(b *testing.B) {
	db := benchSpecsDB(b)
	for b.Loop() {
		if _, err := db.LoadSpecs(context.Background(), "env_a", []string{"api"}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoadResources(b *testing.B) {
	db := benchSpecsDB(b)
	for b.Loop() {
		if _, err := db.LoadResources(context.Background(), "env_a", configdb.Selection{Kinds: []string{"api"}}); err != nil {
			b.Fatal(err)
		}
	}
}
