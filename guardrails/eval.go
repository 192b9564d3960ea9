package guardrails

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"sync"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"

	"github.com/keenauth/configplans/config"
)

// Set is the compiled rules of one policy version, safe for concurrent
// use.
type Set struct {
	rules []Rule
}

// Len is the number of rules.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.rules)
}

// cacheSize bounds Programs: the policy versions in use at once are one
// per environment, and a set that falls out is compiled again.
const cacheSize = 1024

// programs holds the compiled rules by the hash of their JSON: every
// request of every environment whose rules are the same shares them.
var programs = struct {
	sync.Mutex
	sets map[[sha256.Size]byte]*Set
}{sets: map[[sha256.Size]byte]*Set{}}

// Programs returns the compiled rules, compiling them the first time
// these rules are seen (in any environment). Stored rules have passed
// Check; one that no longer compiles (a CEL upgrade) is an error, which
// the caller answers as a 500 rather than leave a rule unenforced.
func Programs(rules []config.Rule) (*Set, error) {
	if len(rules) == 0 {
		return nil, nil
	}
	key := sha256.Sum256(config.MustJSON(rules))
	programs.Lock()
	s, ok := programs.sets[key]
	programs.Unlock()
	if ok {
		return s, nil
	}
	s = &Set{rules: make([]Rule, len(rules))}
	for i, r := range rules {
		c, bad := compile(r.Expression())
		if bad != "" {
			return nil, fmt.Errorf("guardrails: stored rule %q: %s", r.RuleName(), bad)
		}
		s.rules[i] = Rule{Rule: r, compiled: *c}
	}
	programs.Lock()
	if len(programs.sets) >= cacheSize {
		clear(programs.sets)
	}
	programs.sets[key] = s
	programs.Unlock()
	return s, nil
}

// Environment is the environment variable of an evaluation.
type Environment struct {
	ID, Name string
}

// Change is one change of a plan as the rules see it: old and new are
// canonical specs, nil when there is none.
type Change struct {
	Kind, Key, Action string
	Old, New          json.RawMessage
}

// Catch is a rule that caught a change. Err is set when the rule could not
// be evaluated: it catches the change all the same (fail closed).
type Catch struct {
	Rule *Rule
	Err  error
}

// Detail is what a problem or a warning of the catch says: the rule's
// message, or that it could not be evaluated and why.
func (c Catch) Detail() string {
	if c.Err == nil {
		return c.Rule.Text()
	}
	return fmt.Sprintf("the rule %s could not be evaluated (%v), so it counts as caught; its message: %s", c.Rule.RuleName(), c.Err, c.Rule.Text())
}

// Evaluator evaluates the rules of a set over the changes of one plan.
type Evaluator struct {
	// rules are those of the set whose conditions on the environment
	// hold, and byKind the same for a change of each kind that a rule's
	// conditions name (the rules without a condition on the kind, and
	// those whose condition names it, in the rules' order).
	rules  []*Rule
	byKind map[string][]*Rule
	env    *record
	// envSize is the longest of the environment's id and name.
	envSize int
}

// Evaluator returns an evaluator for the plan's environment.
func (s *Set) Evaluator(e Environment) *Evaluator {
	values := map[string]string{"id": e.ID, "name": e.Name}
	ev := &Evaluator{env: newRecord(environmentFields, e.ID, e.Name), envSize: max(len(e.ID), len(e.Name))}
	for i := range s.rules {
		if holds(s.rules[i].conds, "environment", values) {
			ev.rules = append(ev.rules, &s.rules[i])
		}
	}
	for _, r := range ev.rules {
		k, named := r.kind()
		if !named || ev.byKind[k] != nil {
			continue
		}
		if ev.byKind == nil {
			ev.byKind = map[string][]*Rule{}
		}
		for _, o := range ev.rules {
			if ok, on := o.kind(); !on || ok == k {
				ev.byKind[k] = append(ev.byKind[k], o)
			}
		}
	}
	return ev
}

// Eval evaluates every rule over c, in the rules' order, and returns those
// that catch it. old and new are decoded only if a rule reads them.
func (ev *Evaluator) Eval(c Change) []Catch {
	if ev == nil || len(ev.rules) == 0 {
		return nil
	}
	rules, ok := ev.byKind[c.Kind]
	if !ok {
		rules = ev.rules
	}
	values := changeValues{kind: c.Kind, key: c.Key, action: c.Action}
	// The activation, change and new when it is an object are one
	// allocation (old, which most rules do not read, is made apart).
	st := &changeState{change: record{names: changeFields, values: [3]string{c.Kind, c.Key, c.Action}}}
	st.act = activation{env: ev.env, change: &st.change, old: lazySpec{raw: c.Old}, new: lazySpec{raw: c.New, obj: &st.new, index: &st.newIndex}}
	act := &st.act
	size := max(len(c.Old), len(c.New), len(c.Kind), len(c.Key), len(c.Action), ev.envSize)
	var out []Catch
	for _, r := range rules {
		if !values.hold(r.conds) {
			continue // false, whatever the rest says
		}
		val, _, err := r.program(size).Eval(act)
		switch {
		case err != nil:
			out = append(out, Catch{Rule: r, Err: err})
		case val == types.True:
			out = append(out, Catch{Rule: r})
		case val != types.False:
			out = append(out, Catch{Rule: r, Err: fmt.Errorf("the expression gave %v, not a bool", val)})
		}
	}
	return out
}

// changeState is what the evaluation of one change allocates: its
// activation and the values it binds.
type changeState struct {
	act      activation
	change   record
	new      jsonObject
	newIndex memberIndex
}

// activation binds the variables of one change.
type activation struct {
	change, env *record
	old, new    lazySpec
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "change":
		return a.change, true
	case "environment":
		return a.env, true
	case "old":
		return a.old.value(), true
	case "new":
		return a.new.value(), true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

// lazySpec is a spec decoded the first time a rule reads it; obj is the
// storage of its value when it is an object, and index, when set, that of
// its members' index.
type lazySpec struct {
	raw   json.RawMessage
	done  bool
	val   ref.Val
	obj   *jsonObject
	index *memberIndex
}

func (l *lazySpec) value() ref.Val {
	if !l.done {
		l.done = true
		l.val = jsonValueIn(l.raw, l.obj)
		if o, ok := l.val.(*jsonObject); ok {
			o.index = l.index
		}
	}
	return l.val
}

// decodeJSON decodes a spec with its whole numbers as int (CEL's int,
// which a literal such as 3600 is) and the others as double; nil for none.
// The specs' numbers are small integers (lifetimes, lengths, counts),
// which a double holds exactly.
func decodeJSON(raw json.RawMessage) any {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return numbers(v)
}

func numbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x)
		}
	}
	return v
}
