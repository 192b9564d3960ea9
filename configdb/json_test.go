package configdb_test

import (
	"encoding/json"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/test/testdb"
)

// TestJSONScanKeepsEveryRowsValue: JSON.Scan keeps the driver's slice
// without a copy, which is right only while each driver makes a new slice
// for every value. Read row by row, as GORM's scan does, every one of many
// values of different sizes must still be whole once the last is read:
// a driver that reused a buffer between rows would have overwritten the
// earlier ones.
func TestJSONScanKeepsEveryRowsValue(t *testing.T) {
	t.Parallel()
	const n = 200
	check := func(t *testing.T, db *gorm.DB, query string) {
		t.Helper()
		var rows []struct{ V configdb.JSON }
		if err := db.Raw(query).Scan(&rows).Error; err != nil {
			t.Fatal(err)
		}
		if len(rows) != n {
			t.Fatalf("%d rows, want %d", len(rows), n)
		}
		for i, r := range rows {
			var v struct {
				N   int    `json:"n"`
				Pad string `json:"pad"`
			}
			if err := json.Unmarshal(r.V, &v); err != nil {
				t.Fatalf("row %d: %v: %.80q", i, err, r.V)
			}
			if want := i + 1; v.N != want || v.Pad != strings.Repeat("x", 37*want) {
				t.Fatalf("row %d holds n %d and %d bytes of padding, want n %d and %d bytes", i, v.N, len(v.Pad), want, 37*want)
			}
		}
	}
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		d := testdb.New(t)
		for _, typ := range []string{"jsonb", "json"} {
			check(t, d.DB, `SELECT json_build_object('n', g, 'pad', repeat('x', 37 * g))::`+typ+` AS v
				FROM generate_series(1, 200) AS g ORDER BY g`)
		}
	})
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		db := openSQLite(t)
		// As a blob, the driver's []byte; as text, its string.
		for _, as := range []string{"BLOB", "TEXT"} {
			check(t, db, `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 200)
				SELECT CAST(json_object('n', n, 'pad', replace(hex(zeroblob(37 * n)), '00', 'x')) AS `+as+`) AS v FROM g ORDER BY n`)
		}
	})
}
