package guardrails

import (
	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
)

// condition is a conjunct of a rule's expression of the form
// <variable>.<field> == '<literal>' over change or environment, whose
// members are always there: when it is false, the whole expression is
// false (in CEL, false && anything is false, an error included), so the
// rule need not be evaluated. Most rules start with change.kind == '…':
// a plan's 1,000 changes of one kind skip the rules of every other kind.
type condition struct {
	variable, field, literal string
}

// conditions lists the conditions among the top-level conjuncts of a.
func conditions(a *cel.Ast) []condition {
	var out []condition
	var walk func(e ast.Expr)
	walk = func(e ast.Expr) {
		if e.Kind() != ast.CallKind {
			return
		}
		call := e.AsCall()
		args := call.Args()
		switch {
		case call.FunctionName() == operators.LogicalAnd:
			for _, arg := range args {
				walk(arg)
			}
		case call.FunctionName() == operators.Equals && len(args) == 2:
			if c, ok := equality(args[0], args[1]); ok {
				out = append(out, c)
			} else if c, ok := equality(args[1], args[0]); ok {
				out = append(out, c)
			}
		}
	}
	walk(a.NativeRep().Expr())
	return out
}

// equality reads sel == lit as a condition.
func equality(sel, lit ast.Expr) (condition, bool) {
	if sel.Kind() != ast.SelectKind || lit.Kind() != ast.LiteralKind || sel.AsSelect().IsTestOnly() {
		return condition{}, false
	}
	s, ok := lit.AsLiteral().(types.String)
	operand := sel.AsSelect().Operand()
	if !ok || operand.Kind() != ast.IdentKind {
		return condition{}, false
	}
	v, field := operand.AsIdent(), sel.AsSelect().FieldName()
	known := v == "change" && (field == "kind" || field == "key" || field == "action") ||
		v == "environment" && (field == "id" || field == "name")
	if !known {
		return condition{}, false
	}
	return condition{variable: v, field: field, literal: string(s)}, true
}

// holds tells whether every condition on variable holds for values.
func holds(cs []condition, variable string, values map[string]string) bool {
	for _, c := range cs {
		if c.variable == variable && values[c.field] != c.literal {
			return false
		}
	}
	return true
}

// changeValues are the members of change that conditions read.
type changeValues struct{ kind, key, action string }

// hold tells whether every condition of cs on change holds.
func (v changeValues) hold(cs []condition) bool {
	for _, c := range cs {
		if c.variable != "change" {
			continue
		}
		var got string
		switch c.field {
		case "kind":
			got = v.kind
		case "key":
			got = v.key
		default:
			got = v.action
		}
		if got != c.literal {
			return false
		}
	}
	return true
}

// kind is the kind a condition of r names (change.kind == '…'), if any: r
// is false for a change of any other kind.
func (r *Rule) kind() (string, bool) {
	for _, c := range r.conds {
		if c.variable == "change" && c.field == "kind" {
			return c.literal, true
		}
	}
	return "", false
}
