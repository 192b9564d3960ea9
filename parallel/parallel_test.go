package parallel

import (
	"sync"
	"testing"
)

// TestEachRunsEachOnceAndRaisesAPanicInTheCaller: every index runs
// once, on one goroutine or several; a panic of one of them reaches the
// caller's goroutine, after the others have returned.
func TestEachRunsEachOnceAndRaisesAPanicInTheCaller(t *testing.T) {
	t.Parallel()
	for _, workers := range []int{0, 1, 4} {
		var mu sync.Mutex
		seen := map[int]int{}
		Each(500, workers, func(i int) {
			mu.Lock()
			seen[i]++
			mu.Unlock()
		})
		for i := range 500 {
			if seen[i] != 1 {
				t.Fatalf("%d workers: index %d ran %d times", workers, i, seen[i])
			}
		}
		func() {
			defer func() {
				if r := recover(); r != "spec 7" {
					t.Errorf("%d workers: recovered %v, want the panic of index 7", workers, r)
				}
			}()
			Each(100, workers, func(i int) {
				if i == 7 {
					panic("spec 7")
				}
			})
		}()
	}
}
