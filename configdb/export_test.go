package configdb

import (
	"context"

	"gorm.io/gorm"
)

// InsertLogsAsApplied writes logs as an apply's record does (logInsert,
// with logRecords' parameters), for the tests of package configdb_test.
func InsertLogsAsApplied(g *gorm.DB, envID string, logs []LogRow) error {
	records, shared := logRecords(logs)
	return g.Exec(logInsert, append(append([]any{envID}, shared.args()...), records)...).Error
}

// Gorm is the transaction's handle, for the tests' own statements in it.
func (tx *Tx) Gorm(ctx context.Context) *gorm.DB { return tx.q(ctx) }

// LargeParameter is the size of a value past which it is sent in pieces
// through a setting of the transaction (largeParameter).
const LargeParameter = largeParameter
