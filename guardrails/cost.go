package guardrails

import (
	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
)

// sizeEstimator gives the estimate the sizes of §18 where the checker
// knows none: a list or a map holds up to 1,000 elements, a string or
// bytes up to 4,096 characters. A value of type dyn (old, new and what is
// read from them) is counted as a list where a comprehension iterates
// over it, and as a string elsewhere: the larger of the two, so that no
// reading of it is under-estimated.
type sizeEstimator struct {
	// ranges are the ids of the expressions comprehensions iterate over.
	ranges map[int64]bool
}

func newSizeEstimator(a *cel.Ast) sizeEstimator {
	e := sizeEstimator{ranges: map[int64]bool{}}
	ast.PreOrderVisit(a.NativeRep().Expr(), ast.NewExprVisitor(func(x ast.Expr) {
		if x.Kind() == ast.ComprehensionKind {
			e.ranges[x.AsComprehension().IterRange().ID()] = true
		}
	}))
	return e
}

func (e sizeEstimator) EstimateSize(n cost.AstNode) *cost.SizeEstimate {
	if s := n.ComputedSize(); s != nil {
		return s
	}
	switch n.Type().Kind() {
	case types.ListKind, types.MapKind:
		return &cost.SizeEstimate{Min: 0, Max: estimatedListSize}
	case types.StringKind, types.BytesKind:
		return &cost.SizeEstimate{Min: 0, Max: estimatedStringSize}
	case types.DynKind, types.AnyKind:
		if x := n.Expr(); x != nil && e.ranges[x.ID()] {
			return &cost.SizeEstimate{Min: 0, Max: estimatedListSize}
		}
		return &cost.SizeEstimate{Min: 0, Max: estimatedStringSize}
	}
	return nil
}

func (sizeEstimator) EstimateCallCost(function, overloadID string, target *cost.AstNode, args []cost.AstNode) *cost.CallEstimate {
	return nil
}
