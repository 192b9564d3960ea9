package displayname

import (
	"strings"
	"testing"
	"unicode"
)

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

func TestCheckFindsFormatAndControlCharacters(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		want Refusal
	}{
		{"Main\u200b", Refusal{0x200b, 5, ""}},
		{"\ufeffMain", Refusal{0xfeff, 1, ""}},
		{"Ma\u202ein", Refusal{0x202e, 3, ""}},
		{"Ma\u2066in", Refusal{0x2066, 3, ""}}, // a bidi isolate
		{"Ma\u200ein", Refusal{0x200e, 3, ""}}, // the left-to-right mark
		{"Ma\u2060in", Refusal{0x2060, 3, ""}}, // the word joiner is not a joiner of §24
		{"Main\u00ad", Refusal{0x00ad, 5, ""}},
		{"\u0645\u061c\u06cc", Refusal{0x061c, 2, ""}}, // the Arabic letter mark
		// A subdivision flag is an emoji tag sequence: its tags are Cf.
		{"\U0001f3f4\U000e0067\U000e0062\U000e0077\U000e006c\U000e0073\U000e007f", Refusal{0xe0067, 2, ""}},
		{"Ma\tin", Refusal{'\t', 3, ""}},
		{"Main\n", Refusal{'\n', 5, ""}},
		{"Main\u007f", Refusal{0x7f, 5, ""}},
		{"Main\u0085", Refusal{0x85, 5, ""}},
		// The first refused character is the one named.
		{"a\u200b\u200cb", Refusal{0x200b, 2, ""}},
	} {
		got, ok := Check(tt.name)
		if !ok || got != tt.want {
			t.Errorf("Check(%q) = %+v, %v; want %+v, true", tt.name, got, ok, tt.want)
		}
	}
	for _, s := range []string{"Main", "Caf\u00e9", "Cafe\u0301", "Main DB", "東京", "مرحبا", "👩💻", "🏳\ufe0f"} {
		if r, ok := Check(s); ok {
			t.Errorf("Check(%q) = %+v, want none", s, r)
		}
	}
}

// joined are real names that hold a joiner where it joins (§24).
var joined = []struct{ what, name string }{
	{"Persian: I want", "می\u200cخواهم"},
	{"Persian: the books", "کتاب\u200cها"},
	{"Persian: two in one name", "نامه\u200cهای می\u200cخواهم"},
	{"Urdu: responsibility", "ذمہ\u200cداری"},
	{"Hindi: kṣa with a half ka (ZWJ after the virama)", "क्\u200dष"},
	{"Hindi: kṣa with a visible virama (ZWNJ)", "क्\u200cष"},
	{"Malayalam: my (old-style chillu, ZWJ after the virama)", "എന്\u200dറെ"},
	{"Sinhala: Sri Lanka (ZWJ before the ra)", "ශ්\u200dරී ලංකා"},
	{"Bengali: a ra-phala (ZWJ before the virama)", "র\u200d্যাব"},
	{"a Latin name: letters on both sides join, as §24 words it", "Ma\u200cin"},
	{"a technologist", "Team 👩\u200d💻"},
	{"a family", "👨\u200d👩\u200d👧\u200d👦"},
	{"a family of adults and a child", "🧑\u200d🧑\u200d🧒 Support"},
	{"a skin tone before the joiner", "👩🏽\u200d💻 Ops"},
	{"a handshake of two skin tones", "🫱🏻\u200d🫲🏿"},
	{"the rainbow flag: U+FE0F before the joiner", "🏳\ufe0f\u200d🌈"},
	{"the transgender flag", "🏳\ufe0f\u200d⚧\ufe0f"},
	{"a couple with a heart", "👩\u200d❤\ufe0f\u200d👨"},
	{"a polar bear", "🐻\u200d❄\ufe0f"},
	{"a man with a beard", "🧔\u200d♂\ufe0f"},
	{"script and emoji in one name", "می\u200cخواهم 👩\u200d💻"},
}

// misjoined are names holding a joiner where it does not join (§24).
var misjoined = []struct {
	what, name string
	want       Refusal
}{
	{"ZWNJ at the start", "\u200cمی", Refusal{ZWNJ, 1, "at the start"}},
	{"ZWJ at the start", "\u200d👩", Refusal{ZWJ, 1, "at the start"}},
	{"ZWNJ at the end", "می\u200c", Refusal{ZWNJ, 3, "at the end"}},
	{"ZWJ at the end (an old-style Malayalam chillu ending a name)", "അവന്\u200d", Refusal{ZWJ, 5, "at the end"}},
	{"ZWNJ alone", "\u200c", Refusal{ZWNJ, 1, "at the start"}},
	{"ZWNJ doubled", "می\u200c\u200cخواهم", Refusal{ZWNJ, 3, "doubled"}},
	{"ZWJ doubled", "👩\u200d\u200d💻", Refusal{ZWJ, 2, "doubled"}},
	{"ZWNJ then ZWJ", "क्\u200c\u200dष", Refusal{ZWNJ, 3, "doubled"}},
	{"ZWNJ before a space", "کتاب\u200c ها", Refusal{ZWNJ, 5, "beside a space"}},
	{"ZWJ after a space", "Team \u200d👩", Refusal{ZWJ, 6, "beside a space"}},
	{"ZWNJ before a no-break space", "کتاب\u200c\u00a0ها", Refusal{ZWNJ, 5, "beside a space"}},
	{"ZWJ before a digit", "Team\u200d1", Refusal{ZWJ, 5, "beside a digit"}},
	{"ZWNJ after a digit", "1\u200cb", Refusal{ZWNJ, 2, "beside a digit"}},
	{"ZWJ before a Devanagari digit", "क्\u200d१", Refusal{ZWJ, 3, "beside a digit"}},
	{"ZWNJ between two emoji", "👩\u200c💻", Refusal{ZWNJ, 2, "where it does not join"}},
	{"ZWJ between an emoji and a letter", "👩\u200da", Refusal{ZWJ, 2, "where it does not join"}},
	{"ZWJ between a letter and an emoji", "a\u200d👩", Refusal{ZWJ, 2, "where it does not join"}},
	{"ZWJ after U+FE0F of an emoji, before a letter", "🏳\ufe0f\u200da", Refusal{ZWJ, 3, "where it does not join"}},
	{"ZWJ after a skin tone, before a letter", "👩🏽\u200da", Refusal{ZWJ, 3, "where it does not join"}},
	{"ZWNJ after a mark on a digit", "1\u0301\u200cb", Refusal{ZWNJ, 3, "where it does not join"}},
	{"ZWNJ beside punctuation", "a\u200c-b", Refusal{ZWNJ, 2, "where it does not join"}},
	{"ZWJ between two symbols that are not emoji", "\u2190\u200d\u2192", Refusal{ZWJ, 2, "where it does not join"}},
	{"ZWJ before a skin tone alone", "👩\u200d🏽", Refusal{ZWJ, 2, "where it does not join"}},
	{"a joiner that joins, then one that does not", "می\u200cخواهم\u200c", Refusal{ZWNJ, 9, "at the end"}},
}

func TestCheckAcceptsJoinersWhereTheyJoin(t *testing.T) {
	t.Parallel()
	for _, tt := range joined {
		if !strings.ContainsAny(tt.name, "\u200c\u200d") {
			t.Fatalf("%s: %q holds no joiner", tt.what, tt.name)
		}
		if r, ok := Check(tt.name); ok {
			t.Errorf("%s: Check(%q) = %+v, want none", tt.what, tt.name, r)
		}
		if got := Strip(tt.name); got != tt.name {
			t.Errorf("%s: Strip(%q) = %q, want it unchanged", tt.what, tt.name, got)
		}
	}
}

func TestCheckRefusesJoinersThatDoNotJoin(t *testing.T) {
	t.Parallel()
	for _, tt := range misjoined {
		got, ok := Check(tt.name)
		if !ok || got != tt.want {
			t.Errorf("%s: Check(%q) = %+v, %v; want %+v, true", tt.what, tt.name, got, ok, tt.want)
		}
	}
}

// Every string of up to four characters over an alphabet of letters,
// marks, emoji, joiners, spaces, digits and format characters: Check
// accepts what Strip returns, and Strip changes only what Check refuses.
func TestStripLeavesWhatCheckAccepts(t *testing.T) {
	t.Parallel()
	alphabet := []rune{'a', 'م', '\u094d', '\ufe0f', 0x1f469, 0x1f3fd, ZWNJ, ZWJ, 0x200b, ' ', '1'}
	var walk func(prefix []rune)
	walk = func(prefix []rune) {
		s := string(prefix)
		stripped := Strip(s)
		if r, ok := Check(stripped); ok {
			t.Errorf("Check(Strip(%q)) = Check(%q) = %+v, want none", s, stripped, r)
		}
		if _, ok := Check(s); !ok && stripped != s {
			t.Errorf("Strip(%q) = %q, want it unchanged (Check accepts it)", s, stripped)
		}
		if len(prefix) == 4 {
			return
		}
		for _, r := range alphabet {
			walk(append(prefix, r))
		}
	}
	walk(nil)
}

func TestKeyKeepsJoiners(t *testing.T) {
	t.Parallel()
	for _, pair := range [][2]string{
		{"می\u200cخواهم", "میخواهم"},
		{"क्\u200dष", "क्ष"},
		{"क्\u200dष", "क्\u200cष"},
		{"👩\u200d💻", "👩💻"},
	} {
		if Key(pair[0]) == Key(pair[1]) {
			t.Errorf("Key(%q) == Key(%q) = %q: a name with and without a joiner are two names", pair[0], pair[1], Key(pair[0]))
		}
	}
	for _, tt := range joined {
		k := Key(tt.name)
		if strings.Count(k, "\u200c") != strings.Count(tt.name, "\u200c") || strings.Count(k, "\u200d") != strings.Count(tt.name, "\u200d") {
			t.Errorf("%s: Key(%q) = %q: the joiners changed", tt.what, tt.name, k)
		}
		if Key(k) != k {
			t.Errorf("%s: Key(Key(%q)) = %q, want %q", tt.what, tt.name, Key(k), k)
		}
		if r, ok := Check(k); ok {
			t.Errorf("%s: Check(Key(%q)) = %+v: the key of an accepted name is refused", tt.what, tt.name, r)
		}
	}
	if Key("TEAM 👩\u200d💻") != Key("team 👩\u200d💻") {
		t.Errorf("Key folds the case of a name holding a joiner apart")
	}
}

func TestPictographicIsSortedAndSpotOn(t *testing.T) {
	t.Parallel()
	last := rune(-1)
	for _, r := range pictographic.R16 {
		if rune(r.Lo) <= last || r.Hi < r.Lo || r.Stride != 1 {
			t.Fatalf("R16 range %+v out of order", r)
		}
		last = rune(r.Hi)
	}
	for _, r := range pictographic.R32 {
		if rune(r.Lo) <= last || r.Hi < r.Lo || r.Stride != 1 {
			t.Fatalf("R32 range %+v out of order", r)
		}
		last = rune(r.Hi)
	}
	for _, r := range "©👩💻❤♂⚧🌈🫲🧒🦰🐻❄🏳" {
		if !unicode.Is(pictographic, r) {
			t.Errorf("%U is not pictographic", r)
		}
	}
	for _, r := range "a1#*\ufe0f\u200d🏽🇦" {
		if unicode.Is(pictographic, r) {
			t.Errorf("%U is pictographic", r)
		}
	}
}
