package plans

import (
	"fmt"
	"strings"

	"github.com/keenauth/configplans/config"
)

// An answer that refuses a change because other resources reference its
// target (in_use, connection_in_use, reference_broken) names those
// referrers only to a key that may read them: a key with connections:write
// but not applications:read must not learn the applications' keys from a
// refused deletion. The others are counted by kind (§23).

// canRead reports whether the actor holds the read permission of kind k.
func (a Actor) canRead(k config.Kind) bool {
	info, ok := config.LookupKind(k)
	return ok && a.Permissions[info.ReadPerm]
}

// referrerPhrases describes refs (kind/key, as postState.referrers lists
// them): each one readable names itself, the others make one phrase per
// kind that counts them ("2 applications"), after the named ones. A nil
// readable names every referrer.
func referrerPhrases(refs []string, readable func(config.Kind) bool) []string {
	var out []string
	counts := map[config.Kind]int{}
	var hidden []config.Kind
	for _, ref := range refs {
		k, _, _ := strings.Cut(ref, "/")
		kind := config.Kind(k)
		if readable == nil || readable(kind) {
			out = append(out, ref)
			continue
		}
		if counts[kind] == 0 {
			hidden = append(hidden, kind)
		}
		counts[kind]++
	}
	for _, k := range hidden {
		noun := strings.ReplaceAll(string(k), "_", " ")
		if counts[k] != 1 {
			noun += "s"
		}
		out = append(out, fmt.Sprintf("%d %s", counts[k], noun))
	}
	return out
}
