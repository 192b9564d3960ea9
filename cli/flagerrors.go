package cli

import (
	"errors"
	"strconv"
	"strings"
)

// applyFlags are the flags of config apply that make its request body: a
// refusal that points into the body is reported by the flag that wrote
// the value, since the user wrote a flag, not a body.
type applyFlags struct {
	planID    string
	confirm   []string // --confirm-deletion, in the order of confirm_deletions
	spHost    string
	spHostSet bool
}

// namingFlags makes an apply's API error report its body pointers by flag.
func namingFlags(err error, f applyFlags) error {
	var ae *apiError
	if errors.As(err, &ae) {
		ae.flagOf = f.line
		ae.planID = f.planID
	}
	return err
}

// line writes a problem of the apply's body as the flag that produced it
// and what is wrong with its value, the API's code kept for support:
//
//	--confirm-deletion connection/lgacy: not a deletion in this plan (not_a_deletion)
//
// It answers false for a pointer no flag wrote (into the plan, say).
func (f applyFlags) line(fe fieldError) (string, bool) {
	ptr := fe.Pointer
	var flag, what string
	switch {
	case strings.HasPrefix(ptr, "/confirm_deletions/"):
		flag = "--confirm-deletion"
		if i, err := strconv.Atoi(strings.TrimPrefix(ptr, "/confirm_deletions/")); err == nil && i >= 0 && i < len(f.confirm) {
			flag += " " + f.confirm[i]
		}
		what = map[string]string{
			"not_a_deletion": "not a deletion in this plan",
			"duplicate":      "given twice",
			"invalid":        "not KIND/KEY (e.g. connection/legacy)",
		}[fe.Code]
	case ptr == "/confirm_deletions":
		flag = "--confirm-deletion"
	case ptr == "/sp_host":
		flag = "--sp-host"
		if f.spHostSet {
			flag += " " + f.spHost
		}
		what = map[string]string{
			"sp_host_required": "missing: the plan writes OIDC material, which needs the environment's service-provider host",
			"sp_host_unused":   "not needed: the plan writes no OIDC material",
			"invalid":          "not a lowercase DNS name of two or more labels, without a port",
		}[fe.Code]
	case strings.HasPrefix(ptr, "/resolved_secrets/"):
		name := unescapeToken(strings.TrimPrefix(ptr, "/resolved_secrets/"))
		flag = "--secrets-from-env " + name
		what = map[string]string{
			"secret_missing": "missing: the plan needs this secret",
			"secret_unused":  "not needed by this plan",
		}[fe.Code]
	default:
		return "", false
	}
	if what == "" {
		what = strings.TrimSuffix(fe.Detail, ".")
	}
	if what == "" {
		what = "refused"
	}
	return flag + ": " + what + " (" + fe.Code + ")", true
}

// namingVersions makes a plan's API error report its /versions/… pointers
// by the resource of file's "versions" member that moved:
//
//	versions api/orders in keenauth.json: api/orders was listed at version 1 and is now at version 2 (version_changed)
func namingVersions(err error, file string) error {
	var ae *apiError
	if !errors.As(err, &ae) {
		return err
	}
	if file == "-" {
		file = "standard input"
	}
	ae.flagOf = func(fe fieldError) (string, bool) {
		name, ok := strings.CutPrefix(fe.Pointer, "/versions/")
		if !ok || strings.Contains(name, "/") {
			return "", false
		}
		what := strings.TrimSuffix(fe.Detail, ".")
		if what == "" {
			what = "refused"
		}
		return "versions " + unescapeToken(name) + " in " + file + ": " + what + " (" + fe.Code + ")", true
	}
	return err
}

// tokenUnescaper undoes RFC 6901's escapes, built once: a plan's diff
// paths call it for every token.
var tokenUnescaper = strings.NewReplacer("~1", "/", "~0", "~")

// unescapeToken reads one RFC 6901 reference token.
func unescapeToken(t string) string {
	if !strings.Contains(t, "~") {
		return t
	}
	return tokenUnescaper.Replace(t)
}
