// Package guardrails compiles and evaluates the guardrail rules of the
// environment policies (§18): CEL expressions over one change of a plan,
// with the variables change ({kind, key, action}), old and new (the spec
// before and after, null when there is none) and environment ({id,
// name}). A rule whose expression is true catches the change.
//
// CEL is not Turing-complete, and every expression is bounded twice: its
// estimated cost (lists counted at 1,000 elements, strings and values of
// unknown type at 4,096 characters) must stay within MaxCost when the
// policies are stored, and an evaluation is stopped at MaxCost units of
// actual cost. Compiling is the expensive part; Programs keeps the compiled
// rules of every policy version it has seen, shared by every request.
package guardrails

import (
	"fmt"
	"strings"

	"cel.dev/cel-go/cel"

	"github.com/keenauth/configplans/config"
)

// MaxCost bounds a rule's estimated cost at PUT and its actual cost at
// every evaluation, in cel-go's cost units.
const MaxCost = 1_000_000

// Size assumptions of the cost estimate: the size of a list or a map, and
// of a string or a value whose type is known only at run time.
const (
	estimatedListSize   = 1000
	estimatedStringSize = 4096
)

// newEnv is the CEL environment every rule is compiled in.
func newEnv() (*cel.Env, error) {
	strMap := cel.MapType(cel.StringType, cel.StringType)
	return cel.NewEnv(
		cel.Variable("change", strMap),
		cel.Variable("old", cel.DynType),
		cel.Variable("new", cel.DynType),
		cel.Variable("environment", strMap),
		// Specs are JSON, whose numbers decode as doubles or ints: 3600
		// and 3600.0 compare as numbers, whatever their CEL type.
		cel.CrossTypeNumericComparisons(true),
		// Macros are kept as written, so that the rest of an expression
		// can be written back as text (residual).
		cel.EnableMacroCallTracking(),
	)
}

var env = func() *cel.Env {
	e, err := newEnv()
	if err != nil {
		panic(fmt.Sprintf("guardrails: the CEL environment: %v", err))
	}
	return e
}()

// Rule is a compiled rule.
type Rule struct {
	config.Rule
	compiled
}

// compile compiles one expression: a problem's detail when it does not
// compile, is not of type bool, or is estimated to cost more than MaxCost.
func compile(when string) (*compiled, string) {
	ast, iss := env.Compile(when)
	if iss.Err() != nil {
		return nil, "when does not compile: " + oneLine(iss.Err().Error())
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) {
		return nil, fmt.Sprintf("when must be of type bool, not %s.", t)
	}
	est, err := env.EstimateCost(ast, newSizeEstimator(ast))
	if err != nil {
		return nil, "the cost of when cannot be estimated: " + oneLine(err.Error())
	}
	if est.Max > MaxCost {
		return nil, fmt.Sprintf("when's estimated cost is up to %d units, over the limit of %d (lists are counted at %d elements, strings at %d characters); "+
			"iterate over fewer lists, or not one inside another.", est.Max, MaxCost, estimatedListSize, estimatedStringSize)
	}
	c := &compiled{conds: conditions(ast)}
	run := ast
	if len(c.conds) > 0 {
		if r, ok := residual(ast); ok {
			run = r
		}
	}
	c.fastUpTo = untrackedUpTo(run)
	var err2 error
	if c.fast, err2 = env.Program(run, cel.EvalOptions(cel.OptOptimize)); err2 == nil && c.fastUpTo < maxValueSize {
		c.tracked, err2 = env.Program(run, cel.EvalOptions(cel.OptOptimize), cel.CostLimit(MaxCost))
	}
	if err2 != nil {
		return nil, "when cannot be prepared: " + oneLine(err2.Error())
	}
	return c, ""
}

// compiled is an expression ready to evaluate: fast runs without cost
// tracking, tracked with the run-time limit of MaxCost (nil when the
// expression is cheap at any size). Both run the expression without its
// conditions (residual), which the evaluator checks before it runs them.
type compiled struct {
	fast, tracked cel.Program
	// fastUpTo is the largest input (see inputSize) that fast may
	// evaluate: up to it, the estimated cost stays within MaxCost.
	fastUpTo int
	// conds are conditions of the expression on change and environment
	// whose falsity makes it false (see condition).
	conds []condition
}

// program is the program that evaluates an input of n bytes: without
// cost tracking when its estimate at that size is within the limit, which
// spares an evaluation the tracker's allocations (most of its cost), and
// with the limit otherwise.
func (c *compiled) program(n int) cel.Program {
	if n <= c.fastUpTo || c.tracked == nil {
		return c.fast
	}
	return c.tracked
}

// Check compiles the expressions of rules, each when config has nothing
// against it, and returns a problem at /rules/<i>/when, code
// invalid_expression, for each that fails, with CEL's message in its
// detail.
func Check(rules []config.Rule) []config.FieldError {
	var out []config.FieldError
	for i, r := range rules {
		if !config.CompilableRule(r) {
			continue
		}
		if _, bad := compile(r.Expression()); bad != "" {
			out = append(out, config.FieldError{Pointer: fmt.Sprintf("/rules/%d/when", i), Code: config.CodeInvalidExpression, Detail: bad})
		}
	}
	return out
}

// oneLine joins the lines of CEL's message, which points at the column
// of the problem on a line of its own.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " | ")), " ")
}
