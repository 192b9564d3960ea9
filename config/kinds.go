package config

// Kind names a resource type of the configuration.
type Kind string

// The nine resource types of a configuration.
const (
	KindAPI                 Kind = "api"
	KindConnection          Kind = "connection"
	KindRole                Kind = "role"
	KindApplication         Kind = "application"
	KindApplicationBranding Kind = "application_branding"
	KindEnvironmentSettings Kind = "environment_settings"
	KindIdentitySettings    Kind = "identity_settings"
	KindAttackProtection    Kind = "attack_protection"
	KindBranding            Kind = "branding"
)

// SingletonKey is the key of every singleton resource.
const SingletonKey = "default"

// KindInfo describes a resource type: its document key, whether it is a
// singleton, and the permissions that read and write it.
type KindInfo struct {
	Kind      Kind
	DocKey    string
	Singleton bool
	ReadPerm  string
	WritePerm string
}

// Kinds lists every resource type in write order: dependencies first (an API
// before the roles and applications that reference it). Deletions are written
// in the reverse order.
var Kinds = []KindInfo{
	{KindAPI, "apis", false, "apis:read", "apis:write"},
	{KindConnection, "connections", false, "connections:read", "connections:write"},
	{KindRole, "roles", false, "roles:read", "roles:write"},
	{KindApplication, "applications", false, "applications:read", "applications:write"},
	{KindApplicationBranding, "application_branding", false, "branding:read", "branding:write"},
	{KindEnvironmentSettings, "environment_settings", true, "environment-settings:read", "environment-settings:write"},
	{KindIdentitySettings, "identity_settings", true, "identity-settings:read", "identity-settings:write"},
	{KindAttackProtection, "attack_protection", true, "attack-protection:read", "attack-protection:write"},
	{KindBranding, "branding", true, "branding:read", "branding:write"},
}

// Permissions that are not tied to a resource type.
const (
	PermConfigRead         = "config:read"
	PermConfigWrite        = "config:write"
	PermManagementLogsRead = "management-logs:read"
	// PermConfigApprove approves and rejects plans (§17).
	PermConfigApprove = "config:approve"
	// PermWebhooksRead and PermWebhooksWrite read and change the webhook
	// endpoints and their deliveries (§19).
	PermWebhooksRead  = "webhooks:read"
	PermWebhooksWrite = "webhooks:write"
)

var (
	kindIndex   = map[Kind]int{}
	docKeyIndex = map[string]int{}
)

func init() {
	for i, k := range Kinds {
		kindIndex[k.Kind] = i
		docKeyIndex[k.DocKey] = i
	}
}

// LookupKind returns the information of a kind.
func LookupKind(k Kind) (KindInfo, bool) {
	i, ok := kindIndex[k]
	if !ok {
		return KindInfo{}, false
	}
	return Kinds[i], true
}

// LookupDocKey returns the kind whose document key is key.
func LookupDocKey(key string) (KindInfo, bool) {
	i, ok := docKeyIndex[key]
	if !ok {
		return KindInfo{}, false
	}
	return Kinds[i], true
}

// WriteOrder is the position of a kind in write order.
func WriteOrder(k Kind) int { return kindIndex[k] }

// AllPermissions lists every permission an API key can hold.
func AllPermissions() []string {
	seen := map[string]bool{}
	out := []string{PermConfigRead, PermConfigWrite, PermManagementLogsRead, PermConfigApprove}
	out = append(out, PermWebhooksRead, PermWebhooksWrite)
	for _, k := range Kinds {
		for _, p := range []string{k.ReadPerm, k.WritePerm} {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}
