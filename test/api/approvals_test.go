package api_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keenauth/configplans/config"
	"github.com/keenauth/configplans/test/apitest"
)

// putApprovalPolicy sets the environment's required_approvals (the other
// policies at their defaults).
func putApprovalPolicy(t *testing.T, e *apitest.Env, n int) {
	t.Helper()
	r := internalDo(e, "PUT", "/internal/v1/environments/"+e.EnvID+"/policies", map[string]any{"required_approvals": n})
	if r.Status != http.StatusOK || r.JSON()["required_approvals"] != float64(n) {
		t.Fatalf("put required_approvals %d: %d %s", n, r.Status, r.Body)
	}
}

// TestConfigPoliciesAnswersEveryPolicyWithItsValueOrDefault (§17): GET
// /v1/config-policies needs config:read and answers every policy, the
// defaults where none was set, and an empty list of rules.
func TestConfigPoliciesAnswersEveryPolicyWithItsValueOrDefault(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	get := func(secret string) *apitest.Response {
		return e.Do(apitest.Request{Method: "GET", Path: "/v1/config-policies", Secret: secret})
	}
	r := get("")
	want := map[string]any{"object": "config_policies", "require_https_callbacks": false, "allowed_callback_hosts": []any{},
		"min_password_length": nil, "forbid_social_connections": false, "mfa_required": false, "required_approvals": float64(0), "rules": []any{}}
	if r.Status != http.StatusOK {
		t.Fatalf("GET: %d %s", r.Status, r.Body)
	}
	if diff := cmp.Diff(want, r.JSON()); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	internalDo(e, "PUT", "/internal/v1/environments/"+e.EnvID+"/policies", map[string]any{"required_approvals": 2, "min_password_length": 12,
		"allowed_callback_hosts": []any{"*.shop.example"}})
	want["required_approvals"], want["min_password_length"], want["allowed_callback_hosts"] = float64(2), float64(12), []any{"*.shop.example"}
	if diff := cmp.Diff(want, get("").JSON()); diff != "" {
		t.Errorf("after a PUT (-want +got):\n%s", diff)
	}
	if r := get("-"); r.Status != http.StatusUnauthorized {
		t.Errorf("no key: %d %s", r.Status, r.Body)
	}
	r = get(e.Key(config.PermConfigWrite, config.PermConfigApprove))
	if r.Status != http.StatusForbidden || r.Code() != "insufficient_permissions" ||
		!slices.Equal(toStrings(r.JSON()["required_permissions"]), []string{config.PermConfigRead}) {
		t.Errorf("without config:read: %d %s", r.Status, r.Body)
	}
}

// TestRequiredApprovalsOutsideZeroToFiveIsRefused (§17): 422
// validation_failed at /required_approvals, code invalid; nothing changes.
func TestRequiredApprovalsOutsideZeroToFiveIsRefused(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	putApprovalPolicy(t, e, 5)
	putApprovalPolicy(t, e, 1)
	path := "/internal/v1/environments/" + e.EnvID + "/policies"
	for _, n := range []any{6, -1, 1000} {
		r := internalDo(e, "PUT", path, map[string]any{"required_approvals": n, "mfa_required": true})
		internalProblem(t, "required_approvals "+string(config.MustJSON(n)), r, 422, "validation_failed", "/required_approvals")
		if errs, _ := r.JSON()["errors"].([]any); len(errs) == 1 && errs[0].(map[string]any)["code"] != "invalid" {
			t.Errorf("required_approvals %v: code %v, want invalid", n, errs[0].(map[string]any)["code"])
		}
	}
	if r := internalDo(e, "PUT", path, map[string]any{"required_approvals": 1.5}); r.Status != 400 || r.Code() != "malformed_request" {
		t.Errorf("required_approvals 1.5: %d %s", r.Status, r.Body)
	}
	if got := e.Do(apitest.Request{Method: "GET", Path: "/v1/config-policies"}).JSON(); got["required_approvals"] != float64(1) || got["mfa_required"] != false {
		t.Errorf("refused PUTs changed the policies: %v", got)
	}
}

// TestConfigApproveIsAPermission (§17): a key may hold config:approve, and
// GET /v1/api-keys/current lists it.
func TestConfigApproveIsAPermission(t *testing.T) {
	t.Parallel()
	e := apitest.Setup(t, apitest.Options{})
	if !slices.Contains(config.AllPermissions(), config.PermConfigApprove) {
		t.Fatalf("config:approve is not a permission: %v", config.AllPermissions())
	}
	k := getCurrentKey(t, e, e.Key(config.PermConfigApprove, config.PermConfigRead))
	if !slices.Equal(k.Permissions, []string{config.PermConfigApprove, config.PermConfigRead}) {
		t.Errorf("permissions %v", k.Permissions)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}
