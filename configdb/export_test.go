package configdb

import (
	"context"

	"gorm.io/gorm"
)

// Gorm is the transaction's handle, for the tests' own statements in it.
func (tx *Tx) Gorm(ctx context.Context) *gorm.DB { return tx.q(ctx) }
