package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/keenauth/configplans/config/displayname"

	"github.com/keenauth/configplans/canonjson"
)

// The typed specs of §4. Every member is a pointer or a slice so that an
// absent member can be told from a zero value; fields are declared in the
// order of their JSON names so that json.Marshal writes sorted keys, which
// makes the canonical JSON deterministic. A member tagged nullable:"true"
// accepts JSON null; null anywhere else is a malformed request.
//
// Normalisation fills absent optional lists with [] and absent optional
// booleans with false, lower-cases colours, and leaves other absent optional
// members out.

type environmentSettingsSpec struct {
	DefaultLocale            *string `json:"default_locale" validate:"required,max=35,bcp47"`
	DisplayName              *string `json:"display_name" validate:"required,min=1,max=128,visible"`
	IdleSessionLifetimeHours *int    `json:"idle_session_lifetime_hours,omitempty" validate:"omitempty,min=1,max=8760"`
	SessionLifetimeHours     *int    `json:"session_lifetime_hours" validate:"required,min=1,max=8760"`
}

type IdentitySettingsSpec struct {
	AllowedIdentifiers []string            `json:"allowed_identifiers" validate:"required,min=1,dive,oneof=email username phone"`
	MFA                *string             `json:"mfa" validate:"required,oneof=off optional required"`
	PasswordPolicy     *passwordPolicySpec `json:"password_policy" validate:"required"`
}

type passwordPolicySpec struct {
	MinLength      *int  `json:"min_length" validate:"required,min=8,max=128"`
	RequireDigits  *bool `json:"require_digits" validate:"required"`
	RequireSymbols *bool `json:"require_symbols" validate:"required"`
}

type attackProtectionSpec struct {
	BotDetection              *string         `json:"bot_detection" validate:"required,oneof=off low high"`
	BreachedPasswordDetection *enabledSpec    `json:"breached_password_detection" validate:"required"`
	BruteForce                *bruteForceSpec `json:"brute_force" validate:"required"`
}

type enabledSpec struct {
	Enabled *bool `json:"enabled" validate:"required"`
}

type bruteForceSpec struct {
	Enabled     *bool `json:"enabled" validate:"required"`
	MaxAttempts *int  `json:"max_attempts" validate:"required,min=1,max=100"`
}

// brandingSpec is the spec of branding and of application_branding. Colours
// are accepted in either case (#635BFF) and stored lower-cased (#635bff).
type brandingSpec struct {
	LogoURL             *string `json:"logo_url,omitempty" validate:"omitempty,max=2048,https_url"`
	PageBackgroundColor *string `json:"page_background_color,omitempty" validate:"omitempty,hexcolor6"`
	PrimaryColor        *string `json:"primary_color" validate:"required,hexcolor6"`
}

// Connection types.
const (
	ConnectionDatabase   = "database"
	ConnectionSocial     = "social"
	ConnectionEnterprise = "enterprise"
)

// ConnectionSpec holds exactly one of database, social and oidc, the one
// matching its type. An enterprise connection must have the oidc member, but
// it may be null: null leaves the OIDC material as it is, and stays null in
// the canonical JSON.
type ConnectionSpec struct {
	Active      *bool         `json:"active" validate:"required"`
	Database    *databaseSpec `json:"database,omitempty"`
	DisplayName *string       `json:"display_name" validate:"required,min=1,max=128,visible"`
	OIDC        *oidcSpec     `json:"oidc,omitempty" nullable:"true"`
	Social      *socialSpec   `json:"social,omitempty"`
	Type        *string       `json:"type" validate:"required,oneof=database social enterprise"`

	hasOIDC bool // the oidc member is present, possibly null
}

type databaseSpec struct {
	MinPasswordLength *int  `json:"min_password_length,omitempty" validate:"omitempty,min=8,max=128"`
	RequiresUsername  *bool `json:"requires_username" validate:"required"`
}

// socialSpec: client_id is required with use_own_credentials and refused
// without (the platform's own credentials have no client id to configure).
type socialSpec struct {
	ClientID          *string `json:"client_id,omitempty" validate:"omitempty,min=1,max=256"`
	Provider          *string `json:"provider" validate:"required,oneof=github google apple microsoft"`
	UseOwnCredentials *bool   `json:"use_own_credentials" validate:"required"`
}

type oidcSpec struct {
	ClientID *string  `json:"client_id" validate:"required,min=1,max=256"`
	Issuer   *string  `json:"issuer" validate:"required,max=2048,https_url,public_host"`
	Scopes   []string `json:"scopes" validate:"required,min=1,max=100,dive,min=1,max=128,scope_token"`
}

func (c *ConnectionSpec) UnmarshalJSON(b []byte) error {
	type plain ConnectionSpec
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return err
	}
	_, p.hasOIDC = members["oidc"]
	*c = ConnectionSpec(p)
	return nil
}

func (c ConnectionSpec) MarshalJSON() ([]byte, error) {
	type plain ConnectionSpec
	b, err := Marshal(plain(c))
	if err != nil || c.OIDC != nil || !c.hasOIDC {
		return b, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return nil, err
	}
	members["oidc"] = json.RawMessage("null")
	return Marshal(members)
}

type apiSpec struct {
	DisplayName          *string        `json:"display_name" validate:"required,min=1,max=128,visible"`
	Identifier           *string        `json:"identifier" validate:"required,min=1,max=256,abs_uri"`
	Scopes               []apiScopeSpec `json:"scopes" validate:"dive"`
	TokenLifetimeSeconds *int           `json:"token_lifetime_seconds" validate:"required,min=60,max=86400"`
}

type apiScopeSpec struct {
	Description *string `json:"description,omitempty" validate:"omitempty,max=256"`
	Value       *string `json:"value" validate:"required,min=1,max=128,scope_token"`
}

type roleSpec struct {
	Description *string          `json:"description,omitempty" validate:"omitempty,max=256"`
	DisplayName *string          `json:"display_name" validate:"required,min=1,max=128,visible"`
	Permissions []permissionSpec `json:"permissions" validate:"dive"`
}

type permissionSpec struct {
	API   *string `json:"api" validate:"required,rkey"`
	Scope *string `json:"scope" validate:"required,min=1,max=128"`
}

type ApplicationSpec struct {
	APIGrants    []apiGrantSpec `json:"api_grants" validate:"dive"`
	CallbackURLs []string       `json:"callback_urls" validate:"max=100,dive,max=2048,callback_url"`
	Connections  []string       `json:"connections" validate:"dive,rkey"`
	DisplayName  *string        `json:"display_name" validate:"required,min=1,max=128,visible"`
	Type         *string        `json:"type" validate:"required,oneof=spa regular_web native machine_to_machine"`
}

type apiGrantSpec struct {
	API    *string  `json:"api" validate:"required,rkey"`
	Scopes []string `json:"scopes" validate:"required,min=1,dive,min=1,max=128"`
}

// spec is implemented by every typed spec.
type spec interface {
	// normalize fills the defaults of absent optional members.
	normalize()
	// rules checks what struct tags cannot say; pointers are relative to the
	// spec.
	rules() []FieldError
}

// newSpec returns an empty typed spec of a kind.
func newSpec(kind Kind) (spec, bool) {
	switch kind {
	case KindEnvironmentSettings:
		return &environmentSettingsSpec{}, true
	case KindIdentitySettings:
		return &IdentitySettingsSpec{}, true
	case KindAttackProtection:
		return &attackProtectionSpec{}, true
	case KindBranding, KindApplicationBranding:
		return &brandingSpec{}, true
	case KindConnection:
		return &ConnectionSpec{}, true
	case KindAPI:
		return &apiSpec{}, true
	case KindRole:
		return &roleSpec{}, true
	case KindApplication:
		return &ApplicationSpec{}, true
	}
	return nil, false
}

func (s *environmentSettingsSpec) normalize() {}

func (s *environmentSettingsSpec) rules() []FieldError {
	if s.IdleSessionLifetimeHours != nil && s.SessionLifetimeHours != nil &&
		*s.IdleSessionLifetimeHours > *s.SessionLifetimeHours {
		return []FieldError{{Pointer: "/idle_session_lifetime_hours", Code: CodeOutOfRange,
			Detail: "idle_session_lifetime_hours must not exceed session_lifetime_hours."}}
	}
	return nil
}

func (s *IdentitySettingsSpec) normalize() {}

func (s *IdentitySettingsSpec) rules() []FieldError {
	return DuplicateProblems("/allowed_identifiers", "", len(s.AllowedIdentifiers), StringsKey(s.AllowedIdentifiers))
}

func (s *attackProtectionSpec) normalize() {}

func (s *attackProtectionSpec) rules() []FieldError { return nil }

func (s *brandingSpec) normalize() {
	for _, c := range []*string{s.PrimaryColor, s.PageBackgroundColor} {
		if c != nil && hexColorPattern.MatchString(*c) {
			*c = strings.ToLower(*c)
		}
	}
}

func (s *brandingSpec) rules() []FieldError { return nil }

func (s *ConnectionSpec) normalize() {
	if s.OIDC != nil && s.OIDC.Scopes == nil {
		s.OIDC.Scopes = []string{}
	}
}

func (s *ConnectionSpec) rules() []FieldError {
	var out []FieldError
	if s.Type != nil {
		present := map[string]bool{
			ConnectionDatabase:   s.Database != nil,
			ConnectionSocial:     s.Social != nil,
			ConnectionEnterprise: s.hasOIDC,
		}
		members := map[string]string{ConnectionDatabase: "database", ConnectionSocial: "social", ConnectionEnterprise: "oidc"}
		if _, known := present[*s.Type]; known {
			for _, t := range []string{ConnectionDatabase, ConnectionEnterprise, ConnectionSocial} {
				m := members[t]
				switch {
				case t == *s.Type && !present[t]:
					out = append(out, FieldError{Pointer: "/" + m, Code: CodeRequired,
						Detail: fmt.Sprintf("A %s connection requires %s.", t, m)})
				case t != *s.Type && present[t]:
					out = append(out, FieldError{Pointer: "/" + m, Code: CodeTypeMismatch,
						Detail: fmt.Sprintf("%s is not allowed on a %s connection.", m, *s.Type)})
				}
			}
		}
	}
	if so := s.Social; so != nil && so.UseOwnCredentials != nil {
		switch {
		case *so.UseOwnCredentials && so.ClientID == nil:
			out = append(out, FieldError{Pointer: "/social/client_id", Code: CodeRequired,
				Detail: "client_id is required when use_own_credentials is true."})
		case !*so.UseOwnCredentials && so.ClientID != nil:
			out = append(out, FieldError{Pointer: "/social/client_id", Code: CodeNotAllowed,
				Detail: "client_id is only allowed when use_own_credentials is true."})
		}
	}
	if o := s.OIDC; o != nil && len(o.Scopes) > 0 {
		out = append(out, DuplicateProblems("/oidc/scopes", "", len(o.Scopes), StringsKey(o.Scopes))...)
		hasOpenID := false
		for _, sc := range o.Scopes {
			hasOpenID = hasOpenID || sc == "openid"
		}
		if !hasOpenID {
			out = append(out, FieldError{Pointer: "/oidc/scopes", Code: CodeMustIncludeOpenID,
				Detail: `scopes must include "openid".`})
		}
	}
	return out
}

func (s *apiSpec) normalize() {
	if s.Scopes == nil {
		s.Scopes = []apiScopeSpec{}
	}
}

func (s *apiSpec) rules() []FieldError {
	return DuplicateProblems("/scopes", "value", len(s.Scopes), func(i int) (string, bool) {
		v := s.Scopes[i].Value
		return Deref(v), v != nil
	})
}

func (s *roleSpec) normalize() {
	if s.Permissions == nil {
		s.Permissions = []permissionSpec{}
	}
}

func (s *roleSpec) rules() []FieldError {
	return DuplicateProblems("/permissions", "", len(s.Permissions), func(i int) (string, bool) {
		p := s.Permissions[i]
		return Deref(p.API) + "\x00" + Deref(p.Scope), p.API != nil && p.Scope != nil
	})
}

func (s *ApplicationSpec) normalize() {
	if s.APIGrants == nil {
		s.APIGrants = []apiGrantSpec{}
	}
	if s.CallbackURLs == nil {
		s.CallbackURLs = []string{}
	}
	if s.Connections == nil {
		s.Connections = []string{}
	}
	for i := range s.APIGrants {
		if s.APIGrants[i].Scopes == nil {
			s.APIGrants[i].Scopes = []string{}
		}
	}
}

func (s *ApplicationSpec) rules() []FieldError {
	var out []FieldError
	out = append(out, DuplicateProblems("/api_grants", "api", len(s.APIGrants), func(i int) (string, bool) {
		a := s.APIGrants[i].API
		return Deref(a), a != nil
	})...)
	for i, g := range s.APIGrants {
		out = append(out, DuplicateProblems(fmt.Sprintf("/api_grants/%d/scopes", i), "", len(g.Scopes), StringsKey(g.Scopes))...)
	}
	out = append(out, DuplicateProblems("/callback_urls", "", len(s.CallbackURLs), StringsKey(s.CallbackURLs))...)
	out = append(out, DuplicateProblems("/connections", "", len(s.Connections), StringsKey(s.Connections))...)
	return out
}

func Deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// checkSpec validates a decoded spec, fills its defaults and returns its
// canonical JSON with every problem, pointers prefixed with prefix. With
// problems, the JSON is a best-effort normalisation that must not be stored.
func checkSpec(s spec, prefix string) (json.RawMessage, []FieldError) {
	problems := validationProblems(specValidator.Struct(s), prefix)
	for _, p := range s.rules() {
		p.Pointer = prefix + p.Pointer
		problems = append(problems, p)
	}
	s.normalize()
	return CanonicalJSON(s), problems
}

// CanonicalJSON marshals v without HTML escaping, so URLs keep their & and the
// bytes are the same wherever a spec is marshalled.
//
// The result has the capacity of its length: a document's specs are held
// for the whole plan creation, and a buffer grown by doubling would hold up
// to twice each; the encoding is written in a pooled buffer.
func CanonicalJSON(v any) json.RawMessage {
	buf := canonicalBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 1<<20 {
			buf.Reset()
			canonicalBuffers.Put(buf)
		}
	}()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// The typed specs and decoded JSON values always marshal.
		panic(fmt.Sprintf("plans: marshal canonical JSON: %v", err))
	}
	return bytes.Clone(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

var canonicalBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// DefaultSingletons returns the canonical specs a new environment starts
// with (§4). The environment name becomes the display name, without the
// invisible characters a display name may not hold (a joiner is kept where
// it joins) and cut to its first 128 characters; an empty name becomes
// "Default".
func DefaultSingletons(envName string) map[Kind]json.RawMessage {
	name := strings.TrimSpace(displayname.Strip(envName))
	if utf8.RuneCountInString(name) > 128 {
		// The cut can leave a joiner at the end.
		name = strings.TrimSpace(displayname.Strip(string([]rune(name)[:128])))
	}
	if name == "" {
		name = "Default"
	}
	specs := map[Kind]spec{
		KindEnvironmentSettings: &environmentSettingsSpec{
			DefaultLocale:        new("en"),
			DisplayName:          new(name),
			SessionLifetimeHours: new(168),
		},
		KindIdentitySettings: &IdentitySettingsSpec{
			AllowedIdentifiers: []string{"email"},
			MFA:                new("optional"),
			PasswordPolicy:     &passwordPolicySpec{MinLength: new(8), RequireDigits: new(false), RequireSymbols: new(false)},
		},
		KindAttackProtection: &attackProtectionSpec{
			BotDetection:              new("off"),
			BreachedPasswordDetection: &enabledSpec{Enabled: new(false)},
			BruteForce:                &bruteForceSpec{Enabled: new(true), MaxAttempts: new(10)},
		},
		KindBranding: &brandingSpec{PrimaryColor: new("#635bff")},
	}
	out := make(map[Kind]json.RawMessage, len(specs))
	for k, s := range specs {
		s.normalize()
		out[k] = CanonicalJSON(s)
	}
	return out
}

// Reference is a reference from a spec to another resource.
type Reference struct {
	Kind Kind // the referenced kind: connection, api or application
	Key  string
	// Scope is the API scope that must exist on the referenced API, for role
	// permissions and application api grants; "" otherwise.
	Scope string
	// Pointer locates the reference inside the spec ("/api_grants/0/scopes/1",
	// "/connections/2", "/permissions/0"); "" for the application of an
	// application_branding, which is referenced by its key.
	Pointer string
}

// References lists every reference a spec makes, in the order of the spec:
// an application's connections and api grants (one per granted scope), a
// role's permissions, and the application of an application_branding. A spec
// that is not JSON gives none.
func References(kind Kind, key string, raw json.RawMessage) []Reference {
	var out []Reference
	switch kind {
	case KindApplicationBranding:
		out = append(out, Reference{Kind: KindApplication, Key: key})
	case KindRole:
		var s roleSpec
		if json.Unmarshal(raw, &s) != nil {
			return nil
		}
		for i, p := range s.Permissions {
			if p.API != nil {
				out = append(out, Reference{Kind: KindAPI, Key: *p.API, Scope: Deref(p.Scope),
					Pointer: fmt.Sprintf("/permissions/%d", i)})
			}
		}
	case KindApplication:
		var s ApplicationSpec
		if json.Unmarshal(raw, &s) != nil {
			return nil
		}
		for i, c := range s.Connections {
			out = append(out, Reference{Kind: KindConnection, Key: c, Pointer: fmt.Sprintf("/connections/%d", i)})
		}
		for i, g := range s.APIGrants {
			if g.API == nil {
				continue
			}
			for j, sc := range g.Scopes {
				out = append(out, Reference{Kind: KindAPI, Key: *g.API, Scope: sc,
					Pointer: fmt.Sprintf("/api_grants/%d/scopes/%d", i, j)})
			}
		}
	}
	return out
}

// APIScopes returns the scope values of an api spec, in order.
func APIScopes(raw json.RawMessage) []string {
	var s apiSpec
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	out := make([]string, 0, len(s.Scopes))
	for _, sc := range s.Scopes {
		if sc.Value != nil {
			out = append(out, *sc.Value)
		}
	}
	return out
}

// UniqueValue is a value that must be unique among the resources of one kind
// in an environment. Two values are the same when their Field and Key are.
type UniqueValue struct {
	Field string // "display_name" or "identifier", also the spec member
	Value string // as the spec holds it
	// Key is what is compared (§13): a display name folded (NFC and case
	// folding, so "Main" and "MAIN" collide), an identifier as it is, byte
	// for byte.
	Key string
}

// UniqueKey is the part of a UniqueValue that two values are compared on.
type UniqueKey struct{ Field, Key string }

func (u UniqueValue) Compared() UniqueKey { return UniqueKey{u.Field, u.Key} }

// DisplayNameKey is the stored display_name_key of a spec of kind k: its
// folded display name when the display name of k is unique, else nil.
func DisplayNameKey(k Kind, spec json.RawMessage) *string {
	if uniqueField(k) != "display_name" {
		return nil // an api's spec is not scanned for its identifier here
	}
	for _, u := range UniqueValues(k, spec) {
		if u.Field == "display_name" {
			return &u.Key
		}
	}
	return nil
}

// UniqueValues returns the unique values of a spec: a connection's or a
// role's display_name, an api's identifier. Absent or empty values are left
// out.
func UniqueValues(kind Kind, raw json.RawMessage) []UniqueValue {
	field := uniqueField(kind)
	if field == "" {
		return nil
	}
	// Only the one member is read: the rest of the spec is skipped by a
	// scan, not decoded (this runs for every resource a plan looks at).
	value, ok := canonjson.Member(raw, field)
	if !ok {
		// Not a well-formed object: the decoder says what it holds.
		var members struct {
			DisplayName json.RawMessage `json:"display_name"`
			Identifier  json.RawMessage `json:"identifier"`
		}
		if json.Unmarshal(raw, &members) != nil {
			return nil
		}
		value = members.DisplayName
		if field == "identifier" {
			value = members.Identifier
		}
	}
	v, ok := JSONString(value)
	if !ok || v == "" {
		return nil
	}
	key := v
	if field == "display_name" {
		key = displayname.Key(v)
	}
	return []UniqueValue{{Field: field, Value: v, Key: key}}
}

// uniqueField is the member of a spec of kind that holds its unique
// value, "" for a kind without one.
func uniqueField(kind Kind) string {
	switch kind {
	case KindConnection, KindRole:
		return "display_name"
	case KindAPI:
		return "identifier"
	}
	return ""
}

// JSONString is the string a JSON value holds (ok false for any other
// value): the bytes between the quotes of a plain token, else what the
// decoder makes of it.
func JSONString(value []byte) (string, bool) {
	if len(value) > 0 && value[0] == '"' {
		if end, plain, ok := canonjson.ScanString(value, 0); ok && plain && end == len(value) {
			return string(value[1 : end-1]), true
		}
	}
	var v string
	if json.Unmarshal(value, &v) != nil {
		return "", false
	}
	return v, true
}
