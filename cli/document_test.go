package cli

import (
	"strings"
	"testing"
)

func TestUnwrapDocumentTakesAnExportOrABareDocument(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"apis": {}}`:                                   `{"apis": {}}`,
		"\xef\xbb\xbf  {\"apis\": {}}\n":                 `{"apis": {}}`,
		`{"config": {"apis": {}}}`:                       `{"apis": {}}`,
		`{"config": {"apis": {}}, "versions": {"a": 1}}`: `{"apis": {}}`,
	} {
		got, err := unwrapDocument("f", []byte(in))
		if err != nil || string(got) != want {
			t.Errorf("unwrapDocument(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"":                               "f is empty",
		"null":                           "f is not a JSON object: it holds null",
		`"text"`:                         "f is not a JSON object: the top level is a JSON string",
		"{\n\"apis\": }":                 "(line 2, column 9)",
		`{"config": {}, "prune": true}`:  `an export has no member "prune"`,
		`{"config": {}, "b": 1, "a": 2}`: `an export has no member "a", "b"`,
	} {
		_, err := unwrapDocument("f", []byte(in))
		if err == nil || !strings.Contains(err.Error(), want) || exitCode(err) != ExitUsage {
			t.Errorf("unwrapDocument(%q) error %v, want %q (exit 2)", in, err, want)
		}
	}
}
