package plans

import "time"

// ApplyObservation describes one answered apply request, for the metrics.
type ApplyObservation struct {
	// Outcome is "applied", "validated" (a validate_only request that passed
	// every check), "replayed" (an Idempotency-Key retry of an applied plan)
	// or the code of the error answered.
	Outcome      string
	ValidateOnly bool
	// Changes is the number of changes of the plan; 0 when the apply failed.
	Changes  int
	Duration time.Duration
}

// observeApply tells the OnApply hook how an apply ended. It is deferred
// with pointers to the apply's results.
func (h Hooks) observeApply(start time.Time, validateOnly bool, res *ApplyResult, err *error) {
	if h.OnApply == nil {
		return
	}
	o := ApplyObservation{ValidateOnly: validateOnly, Duration: time.Since(start)}
	switch {
	case *err != nil:
		o.Outcome = string(ErrorCode(*err))
	case res.Replayed:
		o.Outcome = "replayed"
	case validateOnly:
		o.Outcome = "validated"
	default:
		o.Outcome = "applied"
	}
	if *err == nil && res.Plan != nil {
		o.Changes = len(res.Plan.Changes)
	}
	h.OnApply(o)
}

// observePlanCreated tells the OnPlanCreated hook how a plan creation
// ended. It is deferred with a pointer to the creation's error.
func (h Hooks) observePlanCreated(err *error) {
	if h.OnPlanCreated == nil {
		return
	}
	if *err != nil {
		h.OnPlanCreated(string(ErrorCode(*err)))
		return
	}
	h.OnPlanCreated("created")
}
