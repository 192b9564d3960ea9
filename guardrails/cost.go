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
	// max, when not 0, is the size of every list, map and string.
	max uint64
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
	if e.max > 0 {
		switch n.Type().Kind() {
		case types.ListKind, types.MapKind, types.StringKind, types.BytesKind, types.DynKind, types.AnyKind:
			return &cost.SizeEstimate{Min: 0, Max: e.max}
		}
		return nil
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

// maxValueSize bounds the size of any list, map or string a rule can
// read: every value comes from a spec, and no spec is larger than a plan
// (10 MiB), each element or character taking at least a byte of it.
const maxValueSize = 10 << 20

// cheapAtAnySize tells whether a's cost stays within MaxCost whatever
// the sizes of the values it reads, up to maxValueSize: an expression
// without iteration over what it reads (change.kind == 'api' &&
// new.token_lifetime_seconds > 86400). Its evaluation can never reach the
// run-time limit.
func cheapAtAnySize(a *cel.Ast) bool {
	return costWithin(a, maxValueSize)
}

// costWithin tells whether a's estimated cost stays within MaxCost when
// every list, map and string it reads holds at most size elements or
// characters.
func costWithin(a *cel.Ast, size uint64) bool {
	est, err := env.EstimateCost(a, sizeEstimator{max: size})
	return err == nil && est.Max <= MaxCost
}

// untrackedUpTo is the largest input size, in bytes, at which a's
// estimated cost stays within MaxCost (maxValueSize when it does at any
// size, 0 when at none): the largest of the powers of two from 32 bytes
// that does, found by bisection (an estimate grows with the sizes
// it is given). An input of n bytes holds no list, map or string of more
// than n elements or characters, since each takes at least one byte of
// its JSON, so an evaluation of an input up to that size cannot reach
// the limit and may run without cost tracking (see compiled.program).
func untrackedUpTo(a *cel.Ast) int {
	if cheapAtAnySize(a) {
		return maxValueSize
	}
	lo, hi := 5, 24 // 2^24 is over maxValueSize, at which the cost exceeds
	if !costWithin(a, 1<<lo) {
		return 0
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if costWithin(a, 1<<mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return 1 << lo
}
