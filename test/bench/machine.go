package main

import (
	"os"
	"slices"
	"syscall"
	"time"
)

// pageFaultCost is what a first write to a page of fresh anonymous memory
// costs on this machine: the median, over five rounds, of mapping 16 MiB,
// writing a byte to each of its pages and timing those writes, per page.
// It is printed with every run because it tells the machines a run may land
// on apart: 1.4–1.6 µs on one kind, 11–14 µs on the other (2026-12-05), and
// every figure that grows memory — a server's heap, PostgreSQL's backends, a
// process started by the bench — pays it. Figures of runs on machines whose
// cost differs do not compare; their ratios to the bounds measured beside
// them do, mostly.
func pageFaultCost() (time.Duration, error) {
	const size = 16 << 20
	page := os.Getpagesize()
	var rounds []time.Duration
	for range 5 {
		mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
		if err != nil {
			return 0, err
		}
		start := time.Now()
		for i := 0; i < size; i += page {
			mem[i] = 1
		}
		took := time.Since(start)
		if err := syscall.Munmap(mem); err != nil {
			return 0, err
		}
		rounds = append(rounds, took/time.Duration(size/page))
	}
	slices.Sort(rounds)
	return rounds[len(rounds)/2], nil
}
