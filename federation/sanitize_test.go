package federation

import (
	"encoding/base64"
	"strings"
	"testing"
	"unicode/utf8"
)

// longSecret is made of the characters a code may hold, so that only the
// secret check, not the shape of a code, can refuse its parts.
const longSecret = "Kq7wZ2mXv9-Lp4Rt8Ns.b3Hc6Yd_Jf5Gk1Tq0WzA"

func TestSanitizeCodeHoldingPartOfTheSecret(t *testing.T) {
	t.Parallel()
	s := longSecret
	b64 := base64.StdEncoding.EncodeToString([]byte(s))
	tests := []struct {
		name string
		code string
		want string
	}{
		{"the whole secret", s, CodeInvalid},
		{"its 20-byte prefix", s[:20], CodeInvalid},
		{"its 8-byte prefix", s[:8], CodeInvalid},
		{"its 8-byte suffix", s[len(s)-8:], CodeInvalid},
		{"a middle chunk", s[15:23], CodeInvalid},
		{"a middle chunk inside other text", "bad_" + s[15:23] + "_x", CodeInvalid},
		{"two overlapping chunks", s[10:18] + s[14:22], CodeInvalid},
		{"a chunk of its base64 form", "e" + b64[4:12], CodeInvalid},
		{"7 bytes of it", "x_" + s[15:22], "x_" + s[15:22]},
		{"7 bytes of it twice, not in a row", s[0:7] + "_" + s[7:14], s[0:7] + "_" + s[7:14]},
		{"an ordinary code", "issuer_unreachable", "issuer_unreachable"},
	}
	m := newSecretMatcher(secretForms(s))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := sanitizeFieldError(FieldError{Pointer: "/client_secret", Code: tt.code}, m)
			if got.Code != tt.want || got.Pointer != "/client_secret" {
				t.Errorf("sanitize(%q) = %+v, want code %q at /client_secret", tt.code, got, tt.want)
			}
		})
	}
}

func TestSanitizePointerHoldingPartOfTheSecret(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		secret  string
		pointer string
		want    string
	}{
		{"an index quoted by the secret is cut to its field", "Xy9-k/scopes/2048-Qw", "/scopes/2048", "/scopes"},
		{"a field quoted by the secret is cut to the material", "zz/client_secret!", "/client_secret", ""},
		{"a pointer outside the material", longSecret, "/client_secret/" + longSecret[:20], ""},
		{"a pointer sharing 7 bytes stays", "q/scopes", "/scopes/1", "/scopes/1"},
		{"a short secret in an index", "7", "/scopes/17", "/scopes"},
		{"an ordinary pointer", longSecret, "/scopes/1", "/scopes/1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := sanitizeFieldError(FieldError{Pointer: tt.pointer, Code: "unsupported"}, newSecretMatcher(secretForms(tt.secret)))
			if got.Pointer != tt.want || got.Code != "unsupported" {
				t.Errorf("sanitize(%q) = %+v, want pointer %q", tt.pointer, got, tt.want)
			}
		})
	}
}

func TestSanitizeShortSecretMatchedWhole(t *testing.T) {
	t.Parallel()
	m := newSecretMatcher(secretForms("pw4u"))
	for code, want := range map[string]string{
		"pw4u":          CodeInvalid,
		"bad_pw4u_here": CodeInvalid,
		"pw4":           "pw4",
		"pw_4u":         "pw_4u",
	} {
		if got := sanitizeFieldError(FieldError{Code: code}, m).Code; got != want {
			t.Errorf("code %q → %q, want %q", code, got, want)
		}
	}
}

func TestSanitizeMultiByteSecret(t *testing.T) {
	t.Parallel()
	// 8 bytes of a secret can end or start inside a character; the ASCII
	// run in the middle is what a code could echo.
	s := "clé-ñandú-Abc_def.gh-été"
	m := newSecretMatcher(secretForms(s))
	ascii := s[strings.Index(s, "Abc"):strings.Index(s, "-été")]
	if got := sanitizeFieldError(FieldError{Code: "x" + ascii}, m).Code; got != CodeInvalid {
		t.Errorf("ASCII run of the secret: code = %q", got)
	}
	// "é-ñandú": its 8-byte chunks start or end inside "é", "ñ" and "ú".
	for _, text := range []string{s[2:12], s[len(s)-8:], s[len(s)-10:]} {
		if !utf8.ValidString(text) {
			t.Fatalf("the test's text %q is not valid UTF-8", text)
		}
		if !m.holds("<" + text + ">") {
			t.Errorf("%q not found", text)
		}
		if got := redact("a<"+text+">b", []string{s}); got != "a<[redacted]>b" {
			t.Errorf("redact(%q) = %q", text, got)
		}
	}
	// A text whose characters hold the secret's bytes across their
	// boundaries: "©" ends with the last byte of "é", "é" starts with the
	// first byte of "ú". The whole characters go, and the text stays valid.
	text := "x©-ñandéy"
	if !strings.Contains(text, s[3:11]) || strings.Contains(text, s[2:10]) {
		t.Fatalf("the test's text does not hold exactly the chunk s[3:11]")
	}
	if got := redact(text, []string{s}); got != "x[redacted]y" {
		t.Errorf("redact(%q) = %q, want x[redacted]y", text, got)
	}
}

func TestRedactParts(t *testing.T) {
	t.Parallel()
	s := longSecret
	forms := secretForms(s)
	tests := []struct{ in, want string }{
		{"status " + s + " bad", "status [redacted] bad"},
		{"prefix " + s[:20] + ", suffix " + s[30:], "prefix [redacted], suffix [redacted]"},
		{"overlap " + s[5:13] + s[9:17] + ".", "overlap [redacted]."},
		{"seven " + s[5:12] + " stays", "seven " + s[5:12] + " stays"},
		{"nothing here", "nothing here"},
	}
	for _, tt := range tests {
		if got := redact(tt.in, forms); got != tt.want {
			t.Errorf("redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := redact("x pw4u y pw4u", secretForms("pw4u")); got != "x [redacted] y [redacted]" {
		t.Errorf("short secret: %q", got)
	}
}
