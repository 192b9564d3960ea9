package config

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The unit tests of the third security review (§23) on the configuration
// model; the plan's are in plans/hardening_test.go, the API tests in
// test/api/hardening_test.go, the HTTP edge in test/security.

func TestPublicHostRefusesInternalAddresses(t *testing.T) {
	t.Parallel()
	internal := []string{
		"https://169.254.169.254/latest/meta-data", "https://10.0.0.1", "https://127.0.0.1:6379", "https://0.0.0.0",
		"https://2130706433", "https://2130706433.", "https://0x7f000001", "https://0x7F000001", "https://017700000001",
		"https://127.1", "https://0177.0.0.1", "https://0x7f.0.0.1", "https://127.0.0.0x1", "https://1.2.3.4.",
		"https://[::1]", "https://[::ffff:169.254.169.254]", "https://[::ffff:a9fe:a9fe]", "https://[fe80::1%25eth0]",
		"https://[0:0:0:0:0:ffff:7f00:1]", "https://[::]:8443/x",
		"https://localhost", "https://LOCALHOST.", "https://localhost:8443/oidc", "https://metadata",
		"https://metadata.google.internal", "https://METADATA.GOOGLE.INTERNAL./", "https://printer.local",
		"https://app.localhost", "https://x.y.internal/path",
		"https://%31%32%37.0.0.1/", "https://１２７.０.０.１/", "https://127。0。0。1/", "https://metadata。google。internal/",
		"https://a..example",
	}
	for _, s := range internal {
		// A host Go's URL parser cannot read is refused as no https URL.
		if isHTTPSURL(s) && IsPublicHostURL(s) {
			t.Errorf("%s: accepted, want refused as internal", s)
		}
	}
	public := []string{
		"https://idp.acme.example", "https://login.microsoftonline.com/tenant/v2.0", "https://accounts.google.com",
		"https://idp.acme.example:8443/realms/x", "https://IDP.Acme.Example.", "https://127.0.0.1.nip.io",
		"https://internal.acme.example", "https://local.example", "https://localhost.example", "https://x.0a",
		"https://bücher.example", "https://a1.example1",
	}
	for _, s := range public {
		if !IsPublicHostURL(s) {
			t.Errorf("%s: refused, want accepted", s)
		}
	}
}

func TestIssuerOnAnInternalAddressIsAProblemOfItsOwn(t *testing.T) {
	t.Parallel()
	spec := func(issuer string) ConnectionSpec {
		var s ConnectionSpec
		raw := fmt.Sprintf(`{"type": "enterprise", "display_name": "ACME", "active": false,
			"oidc": {"issuer": %q, "client_id": "abc", "scopes": ["openid"]}}`, issuer)
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	_, problems := checkSpec(&[]ConnectionSpec{spec("https://169.254.169.254/")}[0], "/config/connections/acme")
	want := []FieldError{{Pointer: "/config/connections/acme/oidc/issuer", Code: CodeInvalid, Detail: InternalHostDetail}}
	if d := cmp.Diff(want, problems); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
	if !strings.Contains(InternalHostDetail, "internal addresses are not allowed") {
		t.Errorf("detail %q", InternalHostDetail)
	}
	// A URL that is not https is that problem only.
	_, problems = checkSpec(&[]ConnectionSpec{spec("http://127.0.0.1/")}[0], "/config/connections/acme")
	if len(problems) != 1 || problems[0].Detail == InternalHostDetail {
		t.Errorf("an http issuer: %+v", problems)
	}
}

// scanHostAllowed is the check hostSet replaced: every pattern tried in
// turn. The lookup must answer as it did.
func scanHostAllowed(host string, patterns []string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" {
		return false
	}
	for _, pat := range patterns {
		pat = strings.ToLower(pat)
		if suffix, wild := strings.CutPrefix(pat, "*."); wild {
			if strings.HasSuffix(host, "."+suffix) && len(host) > len(suffix)+1 {
				return true
			}
		} else if host == pat {
			return true
		}
	}
	return false
}

func TestHostSetAnswersAsTheScanOfEveryPattern(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(23, 3))
	labels := []string{"a", "b", "shop", "example", "x-y", "", "EXAMPLE", "localhost"}
	name := func(min int) string {
		n := min + rng.IntN(4)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = labels[rng.IntN(len(labels))]
		}
		s := strings.Join(parts, ".")
		if rng.IntN(5) == 0 {
			s += "."
		}
		if rng.IntN(7) == 0 {
			s = "." + s
		}
		return s
	}
	for range 300 {
		patterns := make([]string, rng.IntN(6))
		for i := range patterns {
			patterns[i] = name(1)
			if rng.IntN(2) == 0 {
				patterns[i] = "*." + patterns[i]
			}
		}
		set := newHostSet(patterns)
		for range 50 {
			host := name(1)
			if got, want := set.allows(host), scanHostAllowed(host, patterns); got != want {
				t.Fatalf("host %q, patterns %q: lookup %v, scan %v", host, patterns, got, want)
			}
		}
	}
}

func TestAllowedCallbackHostsHoldAtMost1000Patterns(t *testing.T) {
	t.Parallel()
	body := func(n int) []byte {
		hosts := make([]string, n)
		for i := range hosts {
			hosts[i] = fmt.Sprintf("h%d.shop.example", i)
		}
		b, _ := json.Marshal(map[string]any{"allowed_callback_hosts": hosts})
		return b
	}
	if _, problems, err := DecodePolicies(body(MaxAllowedCallbackHosts)); err != nil || len(problems) != 0 {
		t.Errorf("1,000 patterns: %v %v", problems, err)
	}
	_, problems, err := DecodePolicies(body(MaxAllowedCallbackHosts + 1))
	if err != nil || len(problems) != 1 || problems[0].Pointer != "/allowed_callback_hosts" || problems[0].Code != CodeTooMany {
		t.Errorf("1,001 patterns: %+v %v", problems, err)
	}
}
