package plans

import (
	"fmt"
	"github.com/keenauth/configplans/config"
)

// versionConflicts lists every resource of expected that is no longer at
// its version, a deleted one included (§13): the 409 config_conflict of
// plan creation, one version_changed problem each.
func versionConflicts(expected []config.ExpectedVersion, cur state) []config.FieldError {
	var out []config.FieldError
	for _, ev := range expected {
		ref := resourceRef(ev.Kind, ev.Key)
		ptr := "/versions/" + config.EscapeToken(ref)
		switch r := cur.get(ev.Kind, ev.Key); {
		case r == nil:
			out = append(out, config.FieldError{Pointer: ptr, Code: config.CodeVersionChanged,
				Detail: fmt.Sprintf("%s was listed at version %d and no longer exists", ref, ev.Version)})
		case r.Version != ev.Version:
			out = append(out, config.FieldError{Pointer: ptr, Code: config.CodeVersionChanged,
				Detail: fmt.Sprintf("%s was listed at version %d and is now at version %d", ref, ev.Version, r.Version)})
		}
	}
	return out
}

// versionKinds are the kinds that expected names.
func versionKinds(expected []config.ExpectedVersion) []config.Kind {
	var out []config.Kind
	seen := map[config.Kind]bool{}
	for _, ev := range expected {
		if !seen[ev.Kind] {
			seen[ev.Kind] = true
			out = append(out, ev.Kind)
		}
	}
	return out
}
