package guardrails

import (
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/parser"
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
	conds, _ := conjuncts(a)
	return conds
}

// conjuncts splits the top-level conjuncts of a into its conditions and
// the rest.
func conjuncts(a *cel.Ast) (conds []condition, rest []ast.Expr) {
	var walk func(e ast.Expr)
	walk = func(e ast.Expr) {
		if e.Kind() == ast.CallKind {
			call := e.AsCall()
			args := call.Args()
			switch {
			case call.FunctionName() == operators.LogicalAnd:
				for _, arg := range args {
					walk(arg)
				}
				return
			case call.FunctionName() == operators.Equals && len(args) == 2:
				if c, ok := equality(args[0], args[1]); ok {
					conds = append(conds, c)
					return
				}
				if c, ok := equality(args[1], args[0]); ok {
					conds = append(conds, c)
					return
				}
			}
		}
		rest = append(rest, e)
	}
	walk(a.NativeRep().Expr())
	return conds, rest
}

// residual is a without its conditions: the conjunction of its other
// top-level conjuncts (true when it has none), compiled again from their
// text. Where every condition is true, a's value is residual's: in CEL a
// true conjunct of && leaves the value of the others, false, true or an
// error. The evaluator runs a rule only once its conditions hold, so it
// runs the residual and is spared reading change and environment again.
// ok is false when the rest cannot be written back as text.
func residual(a *cel.Ast) (*cel.Ast, bool) {
	_, rest := conjuncts(a)
	text := make([]string, 0, len(rest))
	for _, e := range rest {
		s, err := parser.Unparse(e, a.NativeRep().SourceInfo())
		if err != nil {
			return nil, false
		}
		text = append(text, "("+s+")")
	}
	src := "true"
	if len(text) > 0 {
		src = strings.Join(text, " && ")
	}
	r, iss := env.Compile(src)
	if iss.Err() != nil || !r.OutputType().IsExactType(cel.BoolType) {
		return nil, false
	}
	return r, true
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
