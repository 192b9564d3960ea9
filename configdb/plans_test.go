package configdb

import "testing"

// TestNumberedContinuesTheParametersOfGORMsInsert: the plan_created
// event's parameters follow those of the plan's INSERT, which GORM
// numbered.
func TestNumberedContinuesTheParametersOfGORMsInsert(t *testing.T) {
	got := numbered("SELECT ?, ?::jsonb FROM p WHERE x = ?", 24)
	if want := "SELECT $25, $26::jsonb FROM p WHERE x = $27"; got != want {
		t.Errorf("numbered = %q, want %q", got, want)
	}
}
