package main

import (
	"math"
	"slices"
	"time"
)

// percentile returns the p-th percentile (0 < p ≤ 100) of raw samples by
// the nearest-rank method: the smallest sample such that at least p % of
// the samples are at or below it. It never interpolates nor averages, so a
// p99 is always a latency some request really had.
func percentile(samples []time.Duration, p float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// median is the 50th percentile by nearest rank: with an even count, the
// lower of the two middle samples.
func median(samples []time.Duration) time.Duration { return percentile(samples, 50) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func mib(n int64) float64 { return float64(n) / (1 << 20) }
