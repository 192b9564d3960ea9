package idempotency

import (
	"errors"
	"strings"
	"testing"
)

func TestParseKey(t *testing.T) {
	t.Parallel()
	long255 := strings.Repeat("k", 255)
	long256 := strings.Repeat("k", 256)
	tests := []struct {
		name   string
		values []string
		want   string
		err    error
	}{
		{"absent", nil, "", nil},
		{"absentEmptySlice", []string{}, "", nil},
		{"bare", []string{"4f2c-key_01"}, "4f2c-key_01", nil},
		{"bareVisiblePunctuation", []string{"a!#$%&'()*+-./:;<=>?@[\\]^_`{|}~z"}, "a!#$%&'()*+-./:;<=>?@[\\]^_`{|}~z", nil},
		{"quotedEqualsBare", []string{`"4f2c-key_01"`}, "4f2c-key_01", nil},
		{"quotedWithSpace", []string{`"two words"`}, "two words", nil},
		{"quotedEscapes", []string{`"a\"b\\c"`}, `a"b\c`, nil},
		{"quotedComma", []string{`"a,b"`}, "a,b", nil},
		{"surroundingWhitespaceIgnored", []string{" \tabc\t "}, "abc", nil},
		{"bare255", []string{long255}, long255, nil},
		{"quoted255", []string{`"` + long255 + `"`}, long255, nil},
		{"bare256TooLong", []string{long256}, "", ErrInvalidKey},
		{"quoted256TooLong", []string{`"` + long256 + `"`}, "", ErrInvalidKey},
		{"empty", []string{""}, "", ErrInvalidKey},
		{"onlySpaces", []string{"   "}, "", ErrInvalidKey},
		{"emptyQuoted", []string{`""`}, "", ErrInvalidKey},
		{"twoHeaderLines", []string{"a", "b"}, "", ErrInvalidKey},
		{"twoIdenticalHeaderLines", []string{"a", "a"}, "", ErrInvalidKey},
		{"list", []string{"a, b"}, "", ErrInvalidKey},
		{"listNoSpace", []string{"a,b"}, "", ErrInvalidKey},
		{"quotedList", []string{`"a", "b"`}, "", ErrInvalidKey},
		{"quotedThenParameter", []string{`"a";x=1`}, "", ErrInvalidKey},
		{"innerSpaceBare", []string{"a b"}, "", ErrInvalidKey},
		{"controlChar", []string{"a\x01b"}, "", ErrInvalidKey},
		{"tabInside", []string{"a\tb"}, "", ErrInvalidKey},
		{"delInside", []string{"a\x7fb"}, "", ErrInvalidKey},
		{"newlineInside", []string{"a\nb"}, "", ErrInvalidKey},
		{"controlCharQuoted", []string{"\"a\x01b\""}, "", ErrInvalidKey},
		{"tabQuoted", []string{"\"a\tb\""}, "", ErrInvalidKey},
		{"nonASCII", []string{"clé"}, "", ErrInvalidKey},
		{"nonASCIIQuoted", []string{`"clé"`}, "", ErrInvalidKey},
		{"unterminatedQuote", []string{`"abc`}, "", ErrInvalidKey},
		{"strayQuoteInBare", []string{`ab"c`}, "", ErrInvalidKey},
		{"badEscape", []string{`"a\nb"`}, "", ErrInvalidKey},
		{"escapeAtEnd", []string{`"abc\`}, "", ErrInvalidKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseKey(tt.values)
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("ParseKey(%q) error = %v, want %v", tt.values, err, tt.err)
			}
			if got != tt.want {
				t.Errorf("ParseKey(%q) = %q, want %q", tt.values, got, tt.want)
			}
		})
	}
}
