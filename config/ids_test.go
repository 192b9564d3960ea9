package config

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"
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

// TestNewIDIsTheLowercaseULID: an id is its prefix and the lowercase text
// of a ULID of now, made in two allocations (the ULID's and the id's).
func TestNewIDIsTheLowercaseULID(t *testing.T) {
	before := ulid.Now()
	id := NewID(PrefixLog)
	body, ok := strings.CutPrefix(id, PrefixLog)
	if !ok || body != strings.ToLower(body) || !ValidID(PrefixLog, id) {
		t.Fatalf("NewID = %q", id)
	}
	u, err := ulid.ParseStrict(strings.ToUpper(body))
	if err != nil {
		t.Fatalf("NewID = %q: %v", id, err)
	}
	if u.Time() < before || u.Time() > ulid.Now() {
		t.Errorf("NewID = %q: time %d, not between %d and now", id, u.Time(), before)
	}
	if strings.ToLower(u.String()) != body {
		t.Errorf("NewID = %q, its ULID reads %s", id, u)
	}
	if n := testing.AllocsPerRun(100, func() { _ = NewID(PrefixLog) }); n > 2 {
		t.Errorf("NewID makes %v allocations, want 2", n)
	}
}
