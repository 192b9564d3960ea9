package config

import (
	"strings"

	"golang.org/x/net/idna"
)

// An enterprise connection's issuer is fetched by the federation service,
// inside the platform's network: an issuer on an internal address would let
// a tenant admin make it call the cloud's metadata service, a database or a
// private API (server-side request forgery). The issuer's host must
// therefore name a public host (§23). This is a check of the name only:
// DNS can point a public name inside, so the federation service must also
// check the address it actually connects to (README, "Security").

// InternalHostDetail is the detail of an issuer refused by publicHost.
const InternalHostDetail = "issuer must name a public host: internal addresses are not allowed " +
	"(an IP address in any form, localhost, a single-label name, or a name under .internal, .local or .localhost)."

// internalSuffixes are the DNS names that only resolve inside a network.
var internalSuffixes = []string{".internal", ".local", ".localhost"}

// IsPublicHostURL reports whether the host of the web URL s is a public DNS
// name. A URL that does not parse passes: the https_url check refuses it.
func IsPublicHostURL(s string) bool {
	u, ok := parseWebURL(s)
	if !ok {
		return true
	}
	return publicHost(u.Hostname())
}

// publicHost reports whether host (a URL's Hostname, percent-decoded) is a
// DNS name of two labels or more that is neither an IP address in any form
// the URL parsers and resolvers accept nor an internal name.
func publicHost(host string) bool {
	if host == "" {
		return false
	}
	// A name with other characters than ASCII is mapped as a browser's
	// (WHATWG) URL parser and IDNA lookups map it: full-width digits and
	// the ideographic full stop become ASCII, so "１２７。０。０。１" is
	// 127.0.0.1. A name that does not map is refused.
	for i := 0; i < len(host); i++ {
		if host[i] >= 0x80 {
			ascii, err := idna.Lookup.ToASCII(host)
			if err != nil {
				return false
			}
			host = ascii
			break
		}
	}
	host = strings.ToLower(strings.TrimRight(host, "."))
	// An IPv6 literal (IPv4-mapped ones included) and a zone: a DNS name
	// never holds a colon or a percent sign.
	if strings.ContainsAny(host, ":%[]") {
		return false
	}
	labels := strings.Split(host, ".")
	if len(labels) < 2 { // a single label: localhost, metadata, 2130706433
		return false
	}
	// A host whose last label is a number is an IPv4 address to the URL
	// parsers and to inet_aton: 127.1, 2130706433's dotted cousins,
	// 0177.0.0.1 (octal), 0x7f.0.0.1 (hex). No top-level domain is a
	// number.
	if numericLabel(labels[len(labels)-1]) {
		return false
	}
	for _, l := range labels {
		if l == "" { // a..b
			return false
		}
	}
	if host == "localhost" {
		return false
	}
	for _, suffix := range internalSuffixes {
		if strings.HasSuffix(host, suffix) {
			return false
		}
	}
	return true
}

// numericLabel reports whether a label is a number as the IPv4 parsers of
// URLs (WHATWG) and resolvers (inet_aton) read one: decimal or octal
// digits, or 0x followed by hexadecimal digits (possibly none).
func numericLabel(l string) bool {
	if l == "" {
		return false
	}
	digits, hex := l, false
	if len(l) >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X') {
		digits, hex = l[2:], true
	}
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		switch {
		case c >= '0' && c <= '9':
		case hex && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'):
		default:
			return false
		}
	}
	return true
}
