// Package displayname holds the two rules of a display name that are not a
// length: the folded key under which connection and role display names are
// unique (§13), and the characters no display name may hold.
//
// It is its own package because the migrator computes the same key for the
// rows written before it existed (migrations cannot import plans, whose
// tests migrate), and the planner, the apply and that backfill must agree
// byte for byte.
package displayname

import (
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Key is the form under which two display names are the same name: Unicode
// NFC normalisation, then full case folding (so "Main", "MAIN" and "main"
// are one name, and "é" precomposed is "e" followed by U+0301). Folding can
// leave a string that is not NFC (ǰ folds to j + U+030C), so the result is
// normalised again: the key is canonical whatever form the name came in.
func Key(name string) string {
	// A cases.Caser keeps state and is not safe for concurrent use: one per
	// call (its cost is a few small allocations).
	return norm.NFC.String(cases.Fold().String(norm.NFC.String(name)))
}

// Invisible returns the first character of name that is an invisible format
// character (Unicode category Cf: U+200B, U+FEFF, U+202E, …) or a control
// character (Cc), which would make two names that read the same differ.
func Invisible(name string) (rune, bool) {
	for _, r := range name {
		if unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Cc, r) {
			return r, true
		}
	}
	return 0, false
}
