package config

import (
	"fmt"
	"regexp"
	"unicode/utf8"
)

// Rule is a guardrail rule of the environment policies (§18): a CEL
// expression over one change of a plan that, when true, catches it. The
// members are pointers so that an absent one (required) is told from an
// empty one (invalid); a stored rule has every member but approvals, which
// only an approval rule has.
type Rule struct {
	Name        *string      `json:"name"`
	When        *string      `json:"when"`
	Enforcement *Enforcement `json:"enforcement"`
	Approvals   *int         `json:"approvals" nullable:"true"`
	Message     *string      `json:"message"`
}

// Enforcement is what a rule does to a change it catches.
type Enforcement string

// The enforcements of a rule.
const (
	// EnforceWarn adds a rule_warning to the plan.
	EnforceWarn Enforcement = "warn"
	// EnforceBlock refuses the plan (and its apply) with policy_conflict.
	EnforceBlock Enforcement = "block"
	// EnforceApproval adds a rule_approval and raises approvals_required.
	EnforceApproval Enforcement = "approval"
)

// Limits of the rules (§18).
const (
	MaxRules           = 50
	MaxRuleWhen        = 4096 // characters
	MaxRuleMessage     = 500  // characters
	MaxRuleApprovals   = 5
	minRuleApprovals   = 1
	ruleNamePatternSrc = `^[a-z0-9][a-z0-9-]{0,62}$`
)

// CodeInvalidExpression is the problem of a rule whose when does not
// compile, is not of type bool, or whose estimated cost is over the limit.
const CodeInvalidExpression Code = "invalid_expression"

var ruleNamePattern = regexp.MustCompile(ruleNamePatternSrc)

// RuleName is the rule's name ("" when absent).
func (r Rule) RuleName() string { return Deref(r.Name) }

// Expression is the rule's when ("" when absent).
func (r Rule) Expression() string { return Deref(r.When) }

// Mode is the rule's enforcement ("" when absent).
func (r Rule) Mode() Enforcement {
	if r.Enforcement == nil {
		return ""
	}
	return *r.Enforcement
}

// RequiredApprovals is how many approvals an approval rule asks for (0 for
// the others).
func (r Rule) RequiredApprovals() int { return Deref(r.Approvals) }

// Text is the rule's message ("" when absent).
func (r Rule) Text() string { return Deref(r.Message) }

// ruleProblems checks the rules' members, everything but the compilation
// of when (a CEL matter, which config does not know): more than 50 rules
// refuse the list whole at /rules; otherwise every problem of every rule at
// /rules/<i>/<field>.
func ruleProblems(rules []Rule) []FieldError {
	if n := len(rules); n > MaxRules {
		return []FieldError{{Pointer: "/rules", Code: CodeTooMany,
			Detail: fmt.Sprintf("rules holds %d rules; at most %d are allowed.", n, MaxRules)}}
	}
	var out []FieldError
	for i, r := range rules {
		out = append(out, r.problems(fmt.Sprintf("/rules/%d", i))...)
	}
	out = append(out, DuplicateProblems("/rules", "name", len(rules), func(i int) (string, bool) {
		return rules[i].RuleName(), rules[i].Name != nil
	})...)
	return out
}

func (r Rule) problems(ptr string) []FieldError {
	var out []FieldError
	add := func(field string, code Code, detail string) {
		out = append(out, FieldError{Pointer: ptr + "/" + field, Code: code, Detail: detail})
	}
	required := func(field string) { add(field, CodeRequired, "A rule needs "+field+".") }
	switch {
	case r.Name == nil:
		required("name")
	case !ruleNamePattern.MatchString(*r.Name):
		add("name", CodeInvalid, "A rule's name is 1–63 lowercase letters, digits and hyphens, starting with a letter or a digit.")
	}
	switch {
	case r.When == nil:
		required("when")
	case utf8.RuneCountInString(*r.When) > MaxRuleWhen:
		add("when", CodeInvalid, fmt.Sprintf("when is %d characters long; at most %d are allowed.", utf8.RuneCountInString(*r.When), MaxRuleWhen))
	}
	switch r.Mode() {
	case EnforceWarn, EnforceBlock, EnforceApproval:
	case "":
		required("enforcement")
	default:
		add("enforcement", CodeInvalid, `enforcement is one of "warn", "block" and "approval".`)
	}
	switch {
	case r.Mode() == EnforceApproval && r.Approvals == nil:
		required("approvals")
	case r.Mode() == EnforceApproval && (*r.Approvals < minRuleApprovals || *r.Approvals > MaxRuleApprovals):
		add("approvals", CodeInvalid, fmt.Sprintf("approvals must be between %d and %d.", minRuleApprovals, MaxRuleApprovals))
	case r.Mode() != EnforceApproval && r.Approvals != nil:
		add("approvals", CodeInvalid, `approvals is given with, and only with, the enforcement "approval".`)
	}
	switch n := utf8.RuneCountInString(r.Text()); {
	case r.Message == nil:
		required("message")
	case n < 1 || n > MaxRuleMessage:
		add("message", CodeInvalid, fmt.Sprintf("message must be 1 to %d characters long.", MaxRuleMessage))
	}
	return out
}

// CompilableRule tells whether the when of rules[i] is worth compiling: it
// is there and within its length (a longer one is already a problem).
func CompilableRule(r Rule) bool {
	return r.When != nil && utf8.RuneCountInString(*r.When) <= MaxRuleWhen
}
