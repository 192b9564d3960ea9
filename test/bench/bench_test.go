package main

import (
	"encoding/json"
	"testing"
	"time"
)

func TestPercentileIsTheNearestRankSampleNeverAnAverage(t *testing.T) {
	t.Parallel()
	ms := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	// 100 samples 1..100 ms, shuffled: p99 is the 99th smallest, p50 the 50th.
	var hundred []int
	for i := 100; i >= 1; i-- {
		hundred = append(hundred, (i*37)%100+1)
	}
	for _, tc := range []struct {
		name    string
		samples []time.Duration
		p       float64
		want    time.Duration
	}{
		{"p99 of 100", ms(hundred...), 99, 99 * time.Millisecond},
		{"p50 of 100", ms(hundred...), 50, 50 * time.Millisecond},
		{"p100 is the maximum", ms(hundred...), 100, 100 * time.Millisecond},
		{"median of an even count is the lower middle sample", ms(4, 1, 3, 2), 50, 2 * time.Millisecond},
		{"median of an odd count is the middle sample", ms(5, 1, 9), 50, 5 * time.Millisecond},
		{"p99 of 10 samples is the largest", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 50), 99, 50 * time.Millisecond},
		{"one sample", ms(7), 99, 7 * time.Millisecond},
		{"no sample", nil, 50, 0},
	} {
		if got := percentile(tc.samples, tc.p); got != tc.want {
			t.Errorf("%s: percentile(%v) = %v, want %v", tc.name, tc.p, got, tc.want)
		}
	}
}

func TestPercentileLeavesTheSamplesInTheirOrder(t *testing.T) {
	t.Parallel()
	s := []time.Duration{3, 1, 2}
	percentile(s, 50)
	if s[0] != 3 || s[1] != 1 || s[2] != 2 {
		t.Errorf("samples reordered: %v", s)
	}
}

func TestSmallSpecIsAbout600Bytes(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"r-00000", "o-09999", "bench"} {
		if n := len(canonicalJSON(smallSpec(key, 123456))); n < 550 || n > 700 {
			t.Errorf("smallSpec(%q) is %d bytes, want about 600", key, n)
		}
	}
}

func TestBigSpecVariantsDifferOnlyByDisplayName(t *testing.T) {
	t.Parallel()
	a, b := bigSpec("big-00001", 0), bigSpec("big-00001", 1)
	if a["display_name"] == b["display_name"] {
		t.Fatal("variants have the same display name: a plan would not update them")
	}
	delete(a, "display_name")
	delete(b, "display_name")
	if string(canonicalJSON(a)) != string(canonicalJSON(b)) {
		t.Error("variants differ beyond the display name: the diff of P5's updates would not be small")
	}
	if n := len(canonicalJSON(bigSpec("big-00001", 0))); n < 8000 || n > 12000 {
		t.Errorf("bigSpec is %d bytes, want about 9.6 KiB", n)
	}
}

func TestDocumentsAreValidPlanBodies(t *testing.T) {
	t.Parallel()
	var body struct {
		Config struct {
			APIs map[string]struct {
				Identifier string `json:"identifier"`
				Scopes     []struct {
					Value       string `json:"value"`
					Description string `json:"description"`
				} `json:"scopes"`
			} `json:"apis"`
		} `json:"config"`
	}
	if err := json.Unmarshal(apisDocument(keyedSpecs("r", 3, 0)), &body); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for k, api := range body.Config.APIs {
		if seen[api.Identifier] {
			t.Errorf("identifier %s repeated: the plan would be refused as a duplicate", api.Identifier)
		}
		seen[api.Identifier] = true
		for _, s := range api.Scopes {
			if len(s.Description) > 256 {
				t.Errorf("%s: a scope description of %d characters is over the spec's 256", k, len(s.Description))
			}
		}
	}
	if len(seen) != 3 {
		t.Errorf("%d apis, want 3", len(seen))
	}
}
