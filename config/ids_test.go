package config

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// idPattern is the form of an id's body, as the contract writes it.
var idPattern = regexp.MustCompile(`^[0-9a-hjkmnp-tv-z]{26}$`)

func validIDByPattern(prefix, s string) bool {
	if len(s) < len(prefix) || s[:len(prefix)] != prefix {
		return false
	}
	body := s[len(prefix):]
	return idPattern.MatchString(body) && body[0] <= '7'
}

// TestValidIDAgreesWithThePattern holds ValidID's table to the pattern,
// on new ids, hand-picked strings and random mutations of ids.
func TestValidIDAgreesWithThePattern(t *testing.T) {
	t.Parallel()
	id := NewID(PrefixPlan)
	inputs := []string{id, "", "cfgp_", PrefixPlan + "8" + id[len(PrefixPlan)+1:], PrefixPlan + "7zzzzzzzzzzzzzzzzzzzzzzzzz",
		PrefixPlan + "00000000000000000000000000", PrefixPlan + "0000000000000000000000000", PrefixPlan + "000000000000000000000000000",
		PrefixPlan + "0000000000000000000000000i", PrefixPlan + "0000000000000000000000000L", PrefixPlan + "0000000000000000000000000\n",
		"cfgr_" + id[len(PrefixPlan):], id + ":apply"}
	rng := rand.New(rand.NewPCG(1, 2))
	const chars = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_:\x00\xff"
	for range 20000 {
		b := []byte(NewID(PrefixPlan))
		for range rng.IntN(3) {
			b[rng.IntN(len(b))] = chars[rng.IntN(len(chars))]
		}
		inputs = append(inputs, string(b[:len(b)-rng.IntN(2)]))
	}
	for _, s := range inputs {
		if got, want := ValidID(PrefixPlan, s), validIDByPattern(PrefixPlan, s); got != want {
			t.Errorf("ValidID(%q) = %v, the pattern says %v", s, got, want)
		}
	}
	if !ValidID(PrefixPlan, id) {
		t.Errorf("a new id %s is not valid", id)
	}
}
