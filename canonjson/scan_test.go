package canonjson

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestNoControl(t *testing.T) {
	t.Parallel()
	want := func(b []byte) bool {
		for _, c := range b {
			if c < 0x20 {
				return false
			}
		}
		return true
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, fill := range []byte{'a', ' ', 0x21, 0x7f, 0x80, 0xff, 0x1f, '"'} {
		for n := range 20 {
			for pos := range n {
				for c := range 256 {
					b := bytes.Repeat([]byte{fill}, n)
					b[pos] = byte(c)
					if rng.IntN(2) == 0 {
						b[rng.IntN(n)] = byte(rng.IntN(256))
					}
					if got := noControl(b); got != want(b) {
						t.Fatalf("noControl(%q) = %v", b, got)
					}
				}
			}
		}
	}
}
