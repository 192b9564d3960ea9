package configdb

import (
	"sync"
	"testing"

	"gorm.io/gorm/schema"
)

// TestNumberedContinuesTheParametersOfGORMsInsert: the plan_created
// event's parameters follow those of the plan's INSERT, which GORM
// numbered.
func TestNumberedContinuesTheParametersOfGORMsInsert(t *testing.T) {
	got := numbered("SELECT ?, ?::jsonb FROM p WHERE x = ?", 24)
	if want := "SELECT $25, $26::jsonb FROM p WHERE x = $27"; got != want {
		t.Errorf("numbered = %q, want %q", got, want)
	}
}

// TestPlanChangesAreTheLastParameterOfItsInsert: the plan's INSERT takes
// its parameters in the order of PlanRow's fields, and pgx appends them to
// one buffer: the changes, up to 10 MiB, go last, so that no parameter
// appended after them grows the buffer while they are held in the old one.
func TestPlanChangesAreTheLastParameterOfItsInsert(t *testing.T) {
	s, err := schema.Parse(&PlanRow{}, &sync.Map{}, schema.NamingStrategy{})
	if err != nil {
		t.Fatal(err)
	}
	if last := s.Fields[len(s.Fields)-1].DBName; last != "changes" {
		t.Errorf("the last column of the plan's INSERT is %s, want changes", last)
	}
}
