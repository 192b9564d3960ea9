package displayname

import "testing"

func TestKeyIsTheSameForNamesThatDifferByCaseOrNormalisationForm(t *testing.T) {
	t.Parallel()
	same := [][]string{
		{"Main", "MAIN", "main", "mAiN"},
		{"Caf\u00e9", "Cafe\u0301", "CAF\u00c9", "CAFE\u0301"},
		{"Stra\u00dfe", "STRASSE", "strasse"},
		{"\u01f0", "j\u030c"},
		{"\u039f\u03b4\u03cc\u03c2", "\u039f\u0394\u038c\u03a3", "\u03bf\u03b4\u03cc\u03c3"},
		{"\u212b", "\u00c5", "\u00e5", "A\u030a"}, // the Ångström sign is Å canonically
	}
	for _, group := range same {
		want := Key(group[0])
		for _, s := range group[1:] {
			if got := Key(s); got != want {
				t.Errorf("Key(%q) = %q, Key(%q) = %q: want the same key", s, got, group[0], want)
			}
		}
	}
}

func TestKeyKeepsDifferentNamesApart(t *testing.T) {
	t.Parallel()
	for _, pair := range [][2]string{
		{"Main", "Main "},
		{"Main", "Mainz"},
		{"Cafe", "Caf\u00e9"},
		{"\u00e9", "e"},
		{"ﬁ", "fi "},
	} {
		if Key(pair[0]) == Key(pair[1]) {
			t.Errorf("Key(%q) == Key(%q) = %q", pair[0], pair[1], Key(pair[0]))
		}
	}
}

func TestKeyIsStable(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"Main", "Cafe\u0301", "Stra\u00dfe", "j\u030c", "\u1e9e"} {
		k := Key(s)
		if Key(k) != k {
			t.Errorf("Key(Key(%q)) = %q, want %q", s, Key(k), k)
		}
	}
}

func TestInvisibleFindsFormatAndControlCharacters(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		want rune
	}{
		{"Main\u200b", 0x200b},
		{"\ufeffMain", 0xfeff},
		{"Ma\u202ein", 0x202e},
		{"Main\u00ad", 0x00ad},
		{"Ma\tin", '\t'},
		{"Main\n", '\n'},
		{"Main\u007f", 0x7f},
		{"Main\u0085", 0x85},
		// The zero-width joiner of emoji sequences is a format character too:
		// the rule is the category, with no exception.
		{"\U0001f469\u200d\U0001f4bb", 0x200d},
	} {
		got, ok := Invisible(tt.name)
		if !ok || got != tt.want {
			t.Errorf("Invisible(%q) = %U, %v; want %U, true", tt.name, got, ok, tt.want)
		}
	}
	for _, s := range []string{"Main", "Caf\u00e9", "Cafe\u0301", "Main DB", "東京", "مرحبا", "👩💻"} {
		if r, ok := Invisible(s); ok {
			t.Errorf("Invisible(%q) = %U, want none", s, r)
		}
	}
}
