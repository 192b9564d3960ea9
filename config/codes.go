package config

// Code is a stable code of the contract: the code of a problem (Error), of
// one of its field problems (FieldError) or of a plan's warning. Clients
// match on them, so they are constants: a misspelt code does not compile.
type Code string

// Problem codes. The service answers each at one HTTP status (its table in
// service/problem.go); a code missing there is answered as internal_error.
const (
	CodeMalformedRequest        Code = "malformed_request"
	CodeUnknownField            Code = "unknown_field"
	CodeInvalidIdempotencyKey   Code = "invalid_idempotency_key"
	CodeUnauthenticated         Code = "unauthenticated"
	CodeInsufficientPermissions Code = "insufficient_permissions"
	CodeNotFound                Code = "not_found"
	CodeMethodNotAllowed        Code = "method_not_allowed"
	CodeRequestTimeout          Code = "request_timeout"
	CodeIdempotencyKeyInUse     Code = "idempotency_key_in_use"
	CodeConfigPlanNotApplicable Code = "config_plan_not_applicable"
	CodeDeletionNotConfirmed    Code = "deletion_not_confirmed"
	CodeConfigConflict          Code = "config_conflict"
	CodeConflict                Code = "conflict"
	CodeConnectionInUse         Code = "connection_in_use"
	CodeRequestHeadersTooLarge  Code = "request_headers_too_large"
	CodeConnectionTestRequired  Code = "connection_test_required"
	CodeConnectionNotTestable   Code = "connection_not_testable"
	CodeConfigPlanExpired       Code = "config_plan_expired"
	CodeRequestTooLarge         Code = "request_too_large"
	CodeConfigDocumentTooLarge  Code = "config_document_too_large"
	CodeIdempotencyKeyMismatch  Code = "idempotency_key_mismatch"
	CodeValidationFailed        Code = "validation_failed"
	CodePolicyConflict          Code = "policy_conflict"
	CodeRateLimited             Code = "rate_limited"
	CodeInternalError           Code = "internal_error"
	CodeNotImplemented          Code = "not_implemented"
	CodeServiceUnavailable      Code = "service_unavailable"
	// CodeSelfApprovalForbidden and CodeApprovalRequired are §17's.
	CodeSelfApprovalForbidden Code = "self_approval_forbidden"
	CodeApprovalRequired      Code = "approval_required"
)

// Field problem codes of decoding and validation.
//
//   - malformed_request: not JSON, a duplicate object key, or a value of the
//     wrong JSON type (a 400 problem).
//   - unknown_field: an unknown document key or spec member (a 400 problem).
//   - required: a required member is absent.
//   - invalid: a value of the right type and size that is not well formed
//     (a key, a URL, a colour, a language tag, a scope, a host pattern, a
//     display name holding an invisible or control character, or a joiner
//     where it does not join).
//   - too_short, too_long: a string or a list below its minimum or above its
//     maximum length.
//   - out_of_range: a number outside its bounds, or above another member it
//     must not exceed.
//   - not_allowed: a value outside the allowed set, or a member that is not
//     allowed in this context (a social client_id without own credentials).
//   - duplicate: a value repeated within a list, or a unique value repeated
//     by two resources of one document.
//   - not_deletable: a singleton mapped to null.
//   - empty: the document has no key.
//   - must_include_openid: OIDC scopes without "openid".
//   - type_mismatch: a connection member that does not match its type.
const (
	CodeRequired          Code = "required"
	CodeInvalid           Code = "invalid"
	CodeTooShort          Code = "too_short"
	CodeTooLong           Code = "too_long"
	CodeOutOfRange        Code = "out_of_range"
	CodeNotAllowed        Code = "not_allowed"
	CodeDuplicate         Code = "duplicate"
	CodeNotDeletable      Code = "not_deletable"
	CodeEmpty             Code = "empty"
	CodeMustIncludeOpenID Code = "must_include_openid"
	CodeTypeMismatch      Code = "type_mismatch"
)

// Field problem codes of planning and applying (§5, §6).
const (
	// References and deletions.
	CodeDanglingReference Code = "dangling_reference"
	CodeUnknownScope      Code = "unknown_scope"
	CodeInUse             Code = "in_use"
	// What moved since planning (config_conflict).
	CodeVersionChanged  Code = "version_changed"
	CodeTypeChanged     Code = "type_changed"
	CodeReferenceBroken Code = "reference_broken"
	// An active enterprise connection without a test of its material.
	CodeTestRequired Code = "test_required"
	// The apply body against the plan.
	CodeTooMany        Code = "too_many"
	CodeSecretUnused   Code = "secret_unused"
	CodeSecretInvalid  Code = "secret_invalid"
	CodeSecretMissing  Code = "secret_missing"
	CodeSPHostRequired Code = "sp_host_required"
	CodeSPHostUnused   Code = "sp_host_unused"
	CodeNotADeletion   Code = "not_a_deletion"
	// A token time reported ahead of the clock.
	CodeInFuture Code = "in_future"
	// The federation service refused OIDC material without saying where.
	CodeRejected Code = "rejected"
)

// Warning codes of a plan.
const (
	CodeDeletionRequiresConfirmation Code = "deletion_requires_confirmation"
	CodeUniqueValueInUse             Code = "unique_value_in_use"
)
