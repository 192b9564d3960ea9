package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// ConfigSchema is the JSON Schema (2020-12) of a plan request body, built
// from the typed specs and their validate tags: the rules the validator
// checks, so the two cannot drift. Every object is closed, every range,
// enum and pattern of a tag is there, and the cross-field rules of the
// specs that a schema can say are added by hand (schemaRules). What a schema
// cannot say — idle_session_lifetime_hours ≤ session_lifetime_hours, a
// member value unique among an array's objects, a display name unique in
// the environment, references — is left to plan creation: the schema never
// refuses a document the service accepts, and a document it accepts may
// still get a 422.
var ConfigSchema = sync.OnceValue(func() []byte {
	b, err := json.MarshalIndent(configSchema(), "", "  ")
	if err != nil {
		panic(fmt.Sprintf("plans: marshal the config schema: %v", err))
	}
	return b
})

type schema = map[string]any

func configSchema() schema {
	defs := schema{}
	docProps := schema{}
	for _, info := range Kinds {
		s, _ := newSpec(info.Kind)
		name := string(info.Kind)
		def := structSchema(specType(s))
		if rules, ok := schemaRules[info.Kind]; ok {
			rules(def)
		}
		def["description"] = "The spec of a " + strings.ReplaceAll(name, "_", " ") + " resource."
		defs[name] = def
		ref := schema{"$ref": "#/$defs/" + name}
		if info.Singleton {
			docProps[info.DocKey] = ref
			continue
		}
		docProps[info.DocKey] = schema{
			"type":                 "object",
			"description":          "Keys (" + keyPattern.String() + ") mapped to specs, or to null to delete the resource.",
			"propertyNames":        schema{"pattern": keyPattern.String()},
			"additionalProperties": schema{"anyOf": []any{ref, schema{"type": "null"}}},
		}
	}
	kinds := make([]string, len(Kinds))
	for i, info := range Kinds {
		kinds[i] = string(info.Kind)
	}
	defs["document"] = schema{
		"type":                 "object",
		"description":          "The configuration document: the types it plans, each mapped to its resources.",
		"properties":           docProps,
		"additionalProperties": false,
		"minProperties":        1,
	}
	return schema{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"title":       "Keenauth plan request",
		"description": "The body of POST /v1/config-plans: a configuration document to plan.",
		"type":        "object",
		"properties": schema{
			"$schema": schema{"type": "string", "description": "Ignored: lets an editor find this schema."},
			"config":  schema{"$ref": "#/$defs/document"},
			"prune":   schema{"type": "boolean", "description": "Delete the resources of the planned types that the document leaves out."},
			"versions": schema{
				"type":        "object",
				"description": "The versions of an export: each listed resource must still be at that version.",
				"propertyNames": schema{
					"pattern": "^(" + strings.Join(kinds, "|") + ")/" + strings.Trim(keyPattern.String(), "^$") + "$",
				},
				"additionalProperties": schema{"type": "integer", "minimum": 1},
			},
		},
		"required":             []string{"config"},
		"additionalProperties": false,
		"$defs":                defs,
	}
}

// structSchema is the closed object schema of a spec struct.
func structSchema(t reflect.Type) schema {
	props := schema{}
	var required []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		tags := strings.Split(f.Tag.Get("validate"), ",")
		own, items := tags, []string(nil)
		for j, tag := range tags {
			if tag == "dive" {
				own, items = tags[:j], tags[j+1:]
				break
			}
		}
		s := valueSchema(f.Type, own, items)
		if f.Tag.Get("nullable") == "true" {
			s = schema{"anyOf": []any{s, schema{"type": "null"}}}
		}
		props[name] = s
		for _, tag := range own {
			if tag == "required" {
				required = append(required, name)
			}
		}
	}
	out := schema{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		out["required"] = required
	}
	return out
}

// valueSchema is the schema of a member of type t with the validate tags
// that apply to it (own) and, for a slice, to its elements (items).
func valueSchema(t reflect.Type, own, items []string) schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var s schema
	switch t.Kind() {
	case reflect.Struct:
		return structSchema(t)
	case reflect.Slice:
		s = schema{"type": "array", "items": valueSchema(t.Elem(), items, nil)}
		if t.Elem().Kind() == reflect.String {
			s["uniqueItems"] = true // every string array refuses duplicates
		}
	case reflect.String:
		s = schema{"type": "string"}
	case reflect.Int:
		s = schema{"type": "integer"}
	case reflect.Bool:
		s = schema{"type": "boolean"}
	default:
		panic(fmt.Sprintf("plans: no schema for %s", t))
	}
	bound := map[string][2]string{
		"array":   {"minItems", "maxItems"},
		"string":  {"minLength", "maxLength"},
		"integer": {"minimum", "maximum"},
	}[s["type"].(string)]
	for _, tag := range own {
		name, arg, _ := strings.Cut(tag, "=")
		switch name {
		case "min", "max":
			n, err := strconv.Atoi(arg)
			if err != nil {
				panic(fmt.Sprintf("plans: validate tag %q", tag))
			}
			if name == "min" {
				s[bound[0]] = n
			} else {
				s[bound[1]] = n
			}
		case "oneof":
			s["enum"] = strings.Fields(arg)
		case "required", "omitempty", "":
		case "public_host":
			// Which hosts are internal is not a pattern's to say: the
			// https_url pattern stands, looser than the validator.
		default:
			p, ok := tagPatterns[name]
			if !ok {
				panic(fmt.Sprintf("plans: validate tag %q has no schema", tag))
			}
			s["pattern"] = p
		}
	}
	return s
}

// tagPatterns are the custom validate tags as ECMA-262 patterns. Where the
// Go check parses (a URL), the pattern is the looser form, so that the
// schema never refuses what the validator accepts.
var tagPatterns = map[string]string{
	"rkey":      keyPattern.String(),
	"hexcolor6": hexColorPattern.String(),
	"bcp47":     localePattern.String(),
	// An https URL with a host: the host part holds no user info.
	"https_url": `^[hH][tT][tT][pP][sS]://[^\x00-\x20\x7f/?#@]+([/?#][^\x00-\x20\x7f]*)?$`,
	// A scheme and something after it.
	"abs_uri": `^[A-Za-z][A-Za-z0-9+.-]*:[^\x00-\x20\x7f]+$`,
	// RFC 6749's scope-token.
	"scope_token": `^[\x21\x23-\x5b\x5d-\x7e]+$`,
	// https, or http on localhost; never a fragment.
	"callback_url": `^([hH][tT][tT][pP][sS]://[^\x00-\x20\x7f/?#@]+([/?][^\x00-\x20\x7f#]*)?|` +
		`[hH][tT][tT][pP]://[lL][oO][cC][aA][lL][hH][oO][sS][tT](:[0-9]*)?([/?][^\x00-\x20\x7f#]*)?)$`,
	// No invisible format (Cf) or control (Cc) character but the joiners
	// U+200C and U+200D, held as themselves: ECMA-262 writes \u200c and Go's
	// regexp \x{200c}. Where a joiner stands (§24) is beyond a pattern
	// that both can read, so the pattern allows one anywhere.
	"visible": `^(?:[^\p{Cc}\p{Cf}]|[` + "\u200c\u200d" + `])*$`,
}

// schemaRules add to a kind's definition the cross-field rules of its spec
// that a schema can say.
var schemaRules = map[Kind]func(def schema){
	// A permission is its (api, scope): the whole element.
	KindRole: func(def schema) {
		def["properties"].(schema)["permissions"].(schema)["uniqueItems"] = true
	},
	KindConnection: func(def schema) {
		def["allOf"] = []any{
			connectionTypeRule(ConnectionDatabase, "database", "social", "oidc"),
			connectionTypeRule(ConnectionSocial, "social", "database", "oidc"),
			connectionTypeRule(ConnectionEnterprise, "oidc", "database", "social"),
		}
		props := def["properties"].(schema)
		// An OIDC connection's scopes include openid.
		oidc := props["oidc"].(schema)["anyOf"].([]any)[0].(schema)
		oidc["properties"].(schema)["scopes"].(schema)["contains"] = schema{"const": "openid"}
		// A social connection has a client_id exactly when it uses its own
		// credentials.
		own := func(v bool) schema {
			return schema{"properties": schema{"use_own_credentials": schema{"const": v}}, "required": []string{"use_own_credentials"}}
		}
		social := props["social"].(schema)
		social["allOf"] = []any{
			schema{"if": own(true), "then": schema{"required": []string{"client_id"}}},
			schema{"if": own(false), "then": schema{"not": schema{"required": []string{"client_id"}}}},
		}
	},
}

// connectionTypeRule: a connection of type t has member and neither of the
// others.
func connectionTypeRule(t, member string, others ...string) schema {
	not := make([]any, len(others))
	for i, o := range others {
		not[i] = schema{"required": []string{o}}
	}
	return schema{
		"if":   schema{"properties": schema{"type": schema{"const": t}}, "required": []string{"type"}},
		"then": schema{"required": []string{member}, "not": schema{"anyOf": not}},
	}
}
