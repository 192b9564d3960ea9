package plans

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/keenauth/configplans/config"
)

// The warnings that catch the usual slips of a first hour (§22): a
// resource left out of an edited export, and a rebase that puts back what
// someone changed since.
const (
	CodeResourceOmitted    config.Code = "resource_omitted"
	CodeRevertsMovedChange config.Code = "reverts_moved_change"
)

// omittedWarnings warns of every resource that the request's versions list
// but its document leaves out: the plan leaves it unchanged, where the
// user who deleted it from an export meant to delete it. With prune, a
// left-out resource of a planned kind is a deletion, so it is not warned
// of. They come in the order of the versions member.
func omittedWarnings(expected []config.ExpectedVersion, inDoc map[string]bool, prune bool, planned []config.Kind) []Warning {
	var out []Warning
	for _, ev := range expected {
		ref := resourceRef(ev.Kind, ev.Key)
		info, _ := config.LookupKind(ev.Kind)
		if inDoc[ref] || (prune && !info.Singleton && slices.Contains(planned, ev.Kind)) {
			continue
		}
		detail := fmt.Sprintf("%s is listed in versions but left out of the document, so the plan leaves it unchanged; ", ref)
		if info.Singleton {
			detail += "a singleton cannot be deleted."
		} else {
			detail += fmt.Sprintf("to delete it, map it to null (\"%s\": {%q: null}), or plan with prune to delete every %s that the document leaves out.",
				info.DocKey, ev.Key, ev.Kind)
		}
		out = append(out, Warning{Code: CodeResourceOmitted, Target: ref, Pointer: "/versions/" + config.EscapeToken(ref), Detail: detail})
	}
	return out
}

// revertWarnings warns of every field that a rebased plan p puts back to
// the value its source was based on although it moved since (listed in
// p.Moved): the rebase would silently revert someone's change. now is the
// state p was planned against. A field is a path of the moved diff; an
// array element added or removed since counts by its value, a member
// inside an array element by the whole array (its index is not stable).
// A resource deleted since that p creates again is reverted as a whole.
func revertWarnings(p *Plan, now state) []Warning {
	changeOf := map[string]int{}
	for i, c := range p.Changes {
		changeOf[resourceRef(c.Kind, c.Key)] = i
	}
	var out []Warning
	for _, m := range p.Moved {
		if m.Key == nil {
			continue
		}
		ref := resourceRef(m.Kind, *m.Key)
		i, ok := changeOf[ref]
		if !ok {
			continue
		}
		c := p.Changes[i]
		if c.Action != ActionCreate && c.Action != ActionUpdate {
			continue
		}
		var specNow json.RawMessage
		if r := now.get(m.Kind, *m.Key); r != nil {
			specNow = json.RawMessage(r.Spec)
		}
		then, ok := config.Revert(specNow, m.Diff)
		if !ok {
			continue // a source stored before diffs carried old
		}
		ptr := fmt.Sprintf("/changes/%d", i)
		for _, f := range revertedFields(m.Diff, decodeSpec(then), decodeSpec(specNow), decodeSpec(c.Spec)) {
			out = append(out, Warning{Code: CodeRevertsMovedChange, Target: ref, Pointer: ptr,
				Detail: f.detail(ref, m.VersionNow)})
		}
	}
	return out
}

// revertedField is one field a rebased change puts back.
type revertedField struct {
	path      []string
	then, now any
	// thenSet, nowSet: whether the field existed then and now.
	thenSet, nowSet bool
	// element: the field is one element of an array, added or removed since.
	element bool
}

// revertedFields are the fields of ops (the moved diff from then to now)
// that planned holds as they were then, each once.
func revertedFields(ops []config.DiffOp, then, now, planned any) []revertedField {
	var out []revertedField
	seen := map[string]bool{}
	for _, op := range ops {
		tokens, err := config.SplitPointer(op.Path)
		if err != nil {
			continue
		}
		if len(tokens) == 0 {
			// The whole resource: deleted since, planned again.
			if now == nil && planned != nil && then != nil {
				out = append(out, revertedField{thenSet: true, then: then})
			}
			continue
		}
		if idx := firstIndex(then, now, tokens); idx >= 0 && idx == len(tokens)-1 && op.Op != "replace" {
			// An element added (value) or removed (old) since: reverted when
			// planned has it removed again, or back.
			var el any
			raw := op.Value
			if op.Op == "remove" {
				raw = op.Old
			}
			if json.Unmarshal(raw, &el) != nil {
				continue
			}
			arr, _ := valueAt(planned, tokens[:idx])
			has := containsValue(arr, el)
			if (op.Op == "add" && !has) || (op.Op == "remove" && has) {
				key := strings.Join(tokens[:idx], "/") + "\x00" + string(raw)
				if !seen[key] {
					seen[key] = true
					out = append(out, revertedField{path: tokens[:idx], element: true,
						then: el, thenSet: op.Op == "remove", now: el, nowSet: op.Op == "add"})
				}
			}
			continue
		} else if idx >= 0 {
			tokens = tokens[:idx] // a member inside an element: the whole array
		}
		key := strings.Join(tokens, "/")
		if seen[key] {
			continue
		}
		tv, tSet := valueAt(then, tokens)
		nv, nSet := valueAt(now, tokens)
		pv, pSet := valueAt(planned, tokens)
		if tSet == nSet && reflect.DeepEqual(tv, nv) {
			continue
		}
		if pSet == tSet && reflect.DeepEqual(pv, tv) {
			seen[key] = true
			out = append(out, revertedField{path: tokens, then: tv, thenSet: tSet, now: nv, nowSet: nSet})
		}
	}
	return out
}

// detail names the field and both values.
func (f revertedField) detail(ref string, versionNow *int) string {
	since := "since the source plan was planned"
	if versionNow != nil {
		since += fmt.Sprintf(" (%s is now at version %d)", ref, *versionNow)
	}
	if len(f.path) == 0 {
		return fmt.Sprintf("%s was deleted %s; this plan creates it again", ref, since)
	}
	field := dottedPath(f.path)
	if f.element {
		if f.nowSet {
			return fmt.Sprintf("%s gained %s %s; this plan removes it again", field, shortValue(f.now), since)
		}
		return fmt.Sprintf("%s lost %s %s; this plan adds it back", field, shortValue(f.then), since)
	}
	switch {
	case !f.thenSet:
		return fmt.Sprintf("%s was set to %s %s; this plan removes it again", field, shortValue(f.now), since)
	case !f.nowSet:
		return fmt.Sprintf("%s (%s) was removed %s; this plan writes %s again", field, shortValue(f.then), since, shortValue(f.then))
	}
	return fmt.Sprintf("%s was changed from %s to %s %s; this plan writes %s again",
		field, shortValue(f.then), shortValue(f.now), since, shortValue(f.then))
}

// decodeSpec decodes a spec (nil when absent).
func decodeSpec(raw json.RawMessage) any {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

// firstIndex is the position of the first token of path that indexes an
// array in then or now (-1: none).
func firstIndex(then, now any, tokens []string) int {
	for i := range tokens {
		for _, v := range []any{then, now} {
			if x, ok := valueAt(v, tokens[:i]); ok {
				if _, isArray := x.([]any); isArray {
					return i
				}
			}
		}
	}
	return -1
}

// valueAt is the value at tokens in v, and whether there is one.
func valueAt(v any, tokens []string) (any, bool) {
	if v == nil {
		return nil, false
	}
	for _, t := range tokens {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[t]; !ok {
				return nil, false
			}
		case []any:
			n, err := strconv.Atoi(t)
			if err != nil || n < 0 || n >= len(x) {
				return nil, false
			}
			v = x[n]
		default:
			return nil, false
		}
	}
	return v, true
}

func containsValue(arr, el any) bool {
	list, _ := arr.([]any)
	for _, x := range list {
		if reflect.DeepEqual(x, el) {
			return true
		}
	}
	return false
}

// dottedPath writes a field as the CLI does: brute_force.max_attempts,
// callback_urls[2].
func dottedPath(tokens []string) string {
	var b strings.Builder
	for i, t := range tokens {
		if _, err := strconv.Atoi(t); err == nil {
			b.WriteString("[" + t + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(t)
	}
	return b.String()
}

// shortValue writes a value as compact JSON, cut past 60 bytes.
func shortValue(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return "?"
	}
	s := strings.TrimSuffix(b.String(), "\n")
	if len(s) > 60 {
		cut := 60
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
