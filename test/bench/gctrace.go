package main

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
)

// gcSummary is what the runtime's gctrace lines (GODEBUG=gctrace=1) say of
// the collections in a stretch of a server's log: how many there were, the
// largest heap live after one (marked), the largest heap at a collection's
// end and the largest goal, in MB as the runtime prints them.
type gcSummary struct {
	Collections int `json:"collections"`
	MaxLiveMB   int `json:"max_live_mb"`
	MaxHeapMB   int `json:"max_heap_mb"`
	MaxGoalMB   int `json:"max_goal_mb"`
	// LiveMB is the heap marked live by each collection, in order: where
	// in a phase its largest live heap fell.
	LiveMB []int `json:"live_mb"`
}

func (g gcSummary) String() string {
	return fmt.Sprintf("%d collections, live ≤ %d MB %v, heap ≤ %d MB, goal ≤ %d MB", g.Collections, g.MaxLiveMB, g.LiveMB, g.MaxHeapMB, g.MaxGoalMB)
}

// gctraceLine is "gc N @… …, A->B->C MB, D MB goal, …": A the heap at the
// collection's start, B at its end, C the heap marked live.
var gctraceLine = regexp.MustCompile(`(?m)^gc \d+ @.* (\d+)->(\d+)->(\d+) MB, (\d+) MB goal`)

func parseGCTrace(text string) gcSummary {
	var g gcSummary
	for _, m := range gctraceLine.FindAllStringSubmatch(text, -1) {
		n := make([]int, 4)
		for i := range n {
			n[i], _ = strconv.Atoi(m[i+1])
		}
		g.Collections++
		g.MaxHeapMB = max(g.MaxHeapMB, n[0], n[1])
		g.MaxLiveMB = max(g.MaxLiveMB, n[2])
		g.LiveMB = append(g.LiveMB, n[2])
		g.MaxGoalMB = max(g.MaxGoalMB, n[3])
	}
	return g
}

// logSize is the size of the server's log now.
func (s *server) logSize() int64 {
	fi, err := os.Stat(s.logPath)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// gcTrace summarizes the gctrace lines the server logged between two
// logSize readings.
func (s *server) gcTrace(from, to int64) gcSummary {
	f, err := os.Open(s.logPath)
	if err != nil || to <= from {
		return gcSummary{}
	}
	defer f.Close()
	b := make([]byte, to-from)
	n, _ := io.ReadFull(io.NewSectionReader(f, from, to-from), b)
	return parseGCTrace(string(b[:n]))
}
