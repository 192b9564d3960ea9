// Package displayname holds the two rules of a display name that are not a
// length: the folded key under which connection and role display names are
// unique (§13), and the characters no display name may hold, or may hold
// only where they join (§24).
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
//
// Neither step removes a joiner (U+200C, U+200D), so a name with a ZWNJ
// and the same name without it are two names, as they read differently
// (§24). The stored display_name_key of the rows written before joiners
// were allowed needs no rewrite: no display name could hold one then, and
// Key itself is unchanged, so every stored key is what Key gives today.
func Key(name string) string {
	// A cases.Caser keeps state and is not safe for concurrent use: one per
	// call (its cost is a few small allocations).
	return norm.NFC.String(cases.Fold().String(norm.NFC.String(name)))
}

// The two joiners that are part of how people write (§24): U+200C ZERO
// WIDTH NON-JOINER keeps two letters apart that would join (Persian
// می‌خواهم, Urdu, Hindi), U+200D ZERO WIDTH JOINER joins what would stay
// apart (Hindi क्‍ष, Sinhala ශ්‍රී, the emoji sequence 👩‍💻).
const (
	ZWNJ = '\u200c'
	ZWJ  = '\u200d'
)

// A Refusal is a character a display name may not hold where it stands.
type Refusal struct {
	Rune rune
	// At is its position, counted in characters (code points) from 1.
	At int
	// Why says, for a joiner, why it does not join where it stands ("at the
	// start", "doubled", "beside a space", …); it is empty for a character
	// refused wherever it stands.
	Why string
}

// Check returns the first character of name that a display name may not
// hold (§13, §24): an invisible format character (Unicode category Cf:
// U+200B, U+2060, U+FEFF, U+202E, …) or a control character (Cc), which
// would make two names that read the same differ; and a joiner (U+200C,
// U+200D) that does not join.
//
// A joiner joins when the characters on both sides of it are letters or
// combining marks (either joiner), or are both emoji (U+200D only). Reading
// the character before a joiner, combining marks are skipped to the
// character they are written on, and so are the emoji modifiers
// (U+1F3FB–U+1F3FF) after an emoji: the variation selector U+FE0F of 🏳️‍🌈
// is a combining mark on 🏳, and 👩🏽‍💻 joins 👩 (with its skin tone) and
// 💻. So a mark on a digit or a space does not make a joiner after it join,
// nor does a joiner between an emoji and a letter. The character after a
// joiner is taken as it is: a joiner before a combining mark joins (the
// Bengali র‍্য puts U+200D before the virama). Everywhere else (at the start
// or the end, doubled, beside a space or a digit) a joiner is refused.
func Check(name string) (Refusal, bool) {
	rs := []rune(name)
	for i, r := range rs {
		if why, bad := refused(rs, i); bad {
			return Refusal{Rune: r, At: i + 1, Why: why}, true
		}
	}
	return Refusal{}, false
}

// Strip returns name without the characters Check refuses, each judged
// where it stands in name. A joiner Strip keeps stands between characters
// Strip keeps (letters, marks, emoji), so Check accepts what it returns.
func Strip(name string) string {
	rs := []rune(name)
	out := make([]rune, 0, len(rs))
	for i, r := range rs {
		if _, bad := refused(rs, i); !bad {
			out = append(out, r)
		}
	}
	return string(out)
}

// refused reports whether rs[i] may not stand where it stands, and for a
// joiner why.
func refused(rs []rune, i int) (string, bool) {
	r := rs[i]
	if r != ZWNJ && r != ZWJ {
		return "", unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Cc, r)
	}
	if i == 0 {
		return "at the start", true
	}
	if i == len(rs)-1 {
		return "at the end", true
	}
	prev, next := rs[i-1], rs[i+1]
	switch {
	case isJoiner(prev) || isJoiner(next):
		return "doubled", true
	case unicode.IsSpace(prev) || unicode.IsSpace(next):
		return "beside a space", true
	case unicode.IsDigit(prev) || unicode.IsDigit(next):
		return "beside a digit", true
	}
	both := before(rs, i) & after(next)
	if both&letter != 0 || (r == ZWJ && both&emoji != 0) {
		return "", false
	}
	return "where it does not join", true
}

func isJoiner(r rune) bool { return r == ZWNJ || r == ZWJ }

// class is what a joiner's neighbour is, as far as joining goes: a
// letter, an emoji, both (ℹ U+2139 is a letter and an emoji) or neither.
type class uint8

const (
	letter class = 1 << iota
	emoji
)

// before is the class of the character before the joiner at rs[i]: the
// character its combining marks and emoji modifiers are written on.
func before(rs []rune, i int) class {
	j, modified := i-1, false
	for ; j >= 0; j-- {
		if isEmojiModifier(rs[j]) {
			modified = true
		} else if !unicode.Is(unicode.M, rs[j]) {
			break
		}
	}
	if j < 0 {
		return 0
	}
	var c class
	if unicode.Is(pictographic, rs[j]) {
		c |= emoji
	}
	if unicode.IsLetter(rs[j]) && !modified {
		c |= letter
	}
	return c
}

// after is the class of the character after a joiner.
func after(r rune) class {
	var c class
	if unicode.Is(pictographic, r) {
		c |= emoji
	}
	if unicode.IsLetter(r) || unicode.Is(unicode.M, r) {
		c |= letter
	}
	return c
}

// isEmojiModifier: the five skin tones, U+1F3FB–U+1F3FF.
func isEmojiModifier(r rune) bool { return r >= 0x1f3fb && r <= 0x1f3ff }
