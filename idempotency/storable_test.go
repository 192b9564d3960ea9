package idempotency

import "testing"

func TestStorable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status int
		code   string
		want   bool
	}{
		{200, "", true},
		{201, "", true},
		{204, "", true},
		// The operation's own answers (§6 rows 4, 5, 8–18).
		{404, "not_found", true},
		{403, "insufficient_permissions", true},
		{410, "config_plan_expired", true},
		{409, "config_plan_not_applicable", true},
		{422, "validation_failed", true},
		{409, "deletion_not_confirmed", true},
		{501, "not_implemented", true},
		{409, "config_conflict", true},
		{409, "conflict", true},
		{409, "connection_in_use", true},
		{409, "connection_test_required", true},
		{422, "policy_conflict", true},
		{413, "config_document_too_large", true},
		{409, "connection_not_testable", true},
		// Answers that a retry must not get again without running.
		{400, "malformed_request", false},
		{400, "unknown_field", false},
		{400, "invalid_idempotency_key", false},
		{401, "unauthenticated", false},
		{408, "", false},
		{409, "idempotency_key_in_use", false},
		{422, "idempotency_key_mismatch", false},
		{413, "request_too_large", false},
		{429, "rate_limited", false},
		{500, "internal_error", false},
		{502, "", false},
		{503, "service_unavailable", false},
		{504, "", false},
		{100, "", false},
		{304, "", false},
	}
	for _, tt := range tests {
		if got := Storable(tt.status, tt.code); got != tt.want {
			t.Errorf("Storable(%d, %q) = %v, want %v", tt.status, tt.code, got, tt.want)
		}
	}
}
