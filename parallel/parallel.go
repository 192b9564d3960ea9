// Package parallel runs the independent parts of one request's work on
// the cores the process has.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Workers is how many goroutines n parts of work take when each goroutine
// should have at least per of them: at most GOMAXPROCS, and 1 (the
// caller's) for fewer than 2*per.
func Workers(n, per int) int {
	return max(min(runtime.GOMAXPROCS(0), n/per), 1)
}

// Each runs fn(i) for each i below n, on up to workers goroutines (on the
// caller's alone when workers is at most 1), and returns once every call
// has. A panic in fn is raised again in the caller's goroutine, whose
// recovery answers it: in a goroutine of its own it would end the
// process.
func Each(n, workers int, fn func(i int)) {
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var panicked any
	for range workers {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					once.Do(func() { panicked = r })
				}
			}()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		})
	}
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
}
