// Package metrics holds the Prometheus collectors of keenauthd and adapts
// the hooks of the domain (plans.Hooks), the HTTP layer (service.Hooks) and
// the federation client to them.
//
// Every process (and every test instance) has a registry of its own, never
// the global one. Label values come only from fixed sets — routes, codes,
// outcomes, policies — never from a plan id, a key or an environment id; a
// value outside its set is counted as "other" (or "internal_error" for an
// unknown answer code).
package metrics

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/keenauth/configplans/configdb"
	"github.com/keenauth/configplans/plans"
	"github.com/keenauth/configplans/service"
)

const namespace = "keenauthd"

// durationBuckets fit requests and applies: milliseconds to a minute.
var durationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Metrics are the collectors of one process.
type Metrics struct {
	reg *prometheus.Registry

	httpDuration    *prometheus.HistogramVec
	httpInFlight    prometheus.Gauge
	applies         *prometheus.CounterVec
	applyDuration   *prometheus.HistogramVec
	planCreations   *prometheus.CounterVec
	planReads       *prometheus.CounterVec
	idempotency     *prometheus.CounterVec
	rateLimit       *prometheus.CounterVec
	fleetSaturated  prometheus.Counter
	leasesLost      *prometheus.CounterVec
	federation      *prometheus.HistogramVec
	txRetries       prometheus.Counter
	revisionsPruned prometheus.Counter
}

// New registers the collectors of keenauthd, with the Go runtime and
// process collectors, on a registry of their own.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	f := func(c prometheus.Collector) { reg.MustRegister(c) }
	m := &Metrics{reg: reg}
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "http_request_duration_seconds",
		Help:    "Duration of HTTP requests by method, route template (unmatched for no route) and status class.",
		Buckets: durationBuckets}, []string{"method", "route", "status_class"})
	m.httpInFlight = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "http_requests_in_flight",
		Help: "HTTP requests being served."})
	m.applies = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "applies_total",
		Help: "Apply requests by answer code (applied, validated, replayed or the error's code) and mode (apply or validate_only)."},
		[]string{"code", "mode"})
	m.applyDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "apply_duration_seconds",
		Help:    "Duration of successful applies by plan size: the number of changes, up to 1, 10, 100, 1000, or more.",
		Buckets: durationBuckets}, []string{"plan_size"})
	m.planCreations = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "plan_creations_total",
		Help: "Plan creations, restores included, by outcome (created or the error's code)."}, []string{"outcome"})
	m.planReads = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "plan_reads_total",
		Help: "Plans read (applies, GETs) by where their changes came from: cache (the process created the plan) or database."},
		[]string{"changes"})
	m.idempotency = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "idempotency_requests_total",
		Help: "Requests with an Idempotency-Key by outcome: claimed, replayed, mismatch, in_use, store_unavailable."}, []string{"outcome"})
	m.rateLimit = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "rate_limit_decisions_total",
		Help: "Rate-limit decisions: allowed, limited (by policy) or failed_open (Redis failed or was too slow)."},
		[]string{"decision", "policy"})
	m.fleetSaturated = prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "fleet_saturated_total",
		Help: "Applies refused because the fleet's apply capacity was saturated."})
	m.leasesLost = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "leases_lost_total",
		Help: "Leases that could not be renewed while their request ran: idempotency, inflight or fleet."}, []string{"lease"})
	m.federation = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "federation_call_duration_seconds",
		Help:    "Calls to the federation service by operation and outcome.",
		Buckets: durationBuckets}, []string{"operation", "outcome"})
	m.txRetries = prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "tx_retries_total",
		Help: "Transactions run again after a serialization failure or a deadlock."})
	m.revisionsPruned = prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "revisions_pruned_total",
		Help: "Revisions deleted because they were past the 50 most recent or 90 days old."})
	for _, c := range []prometheus.Collector{m.httpDuration, m.httpInFlight, m.applies, m.applyDuration, m.planCreations, m.planReads,
		m.idempotency, m.rateLimit, m.fleetSaturated, m.leasesLost, m.federation, m.txRetries, m.revisionsPruned} {
		f(c)
	}
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the registry, to register more collectors or gather.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Failures counts the failures of a component (its FailOpens method), as
// the rate limiters and fleets of Redis expose them.
type Failures interface{ FailOpens() uint64 }

// RegisterFailOpens exposes the admissions a component granted without a
// check because Redis failed, as keenauthd_fail_opens_total{component}.
// component is a fixed name: "limiter" or "fleet".
func (m *Metrics) RegisterFailOpens(component string, f Failures) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: namespace, Name: "fail_opens_total",
		Help:        "Admissions granted without a check because Redis failed or was too slow.",
		ConstLabels: prometheus.Labels{"component": component}},
		func() float64 { return float64(f.FailOpens()) }))
}

// Storage returns o with the count of transaction retries added; an
// OnTxRetry already in o still runs.
func (m *Metrics) Storage(o configdb.Options) configdb.Options {
	onRetry := o.OnTxRetry
	o.OnTxRetry = func() {
		m.txRetries.Inc()
		if onRetry != nil {
			onRetry()
		}
	}
	return o
}

// Plans returns h with the metrics' hooks added; hooks already in h still
// run.
func (m *Metrics) Plans(h plans.Hooks) plans.Hooks {
	onPruned, onApply, onCreated, onRead := h.OnRevisionsPruned, h.OnApply, h.OnPlanCreated, h.OnPlanRead
	h.OnRevisionsPruned = func(n int) {
		m.revisionsPruned.Add(float64(n))
		if onPruned != nil {
			onPruned(n)
		}
	}
	h.OnApply = func(o plans.ApplyObservation) {
		mode := "apply"
		if o.ValidateOnly {
			mode = "validate_only"
		}
		m.applies.WithLabelValues(applyCode(o.Outcome), mode).Inc()
		if o.Outcome == "applied" {
			m.applyDuration.WithLabelValues(PlanSize(o.Changes)).Observe(o.Duration.Seconds())
		}
		if onApply != nil {
			onApply(o)
		}
	}
	h.OnPlanCreated = func(outcome string) {
		m.planCreations.WithLabelValues(planCode(outcome)).Inc()
		if onCreated != nil {
			onCreated(outcome)
		}
	}
	h.OnPlanRead = func(changes string) {
		m.planReads.WithLabelValues(oneOf(changes, []string{"cache", "database"})).Inc()
		if onRead != nil {
			onRead(changes)
		}
	}
	return h
}

// Service returns the hooks of the HTTP layer.
func (m *Metrics) Service() service.Hooks {
	return service.Hooks{
		OnRequestStart: m.httpInFlight.Inc,
		OnRequest: func(method, route string, status int, d time.Duration) {
			m.httpInFlight.Dec()
			m.httpDuration.WithLabelValues(oneOf(method, httpMethods), route, statusClass(status)).Observe(d.Seconds())
		},
		OnIdempotency: func(outcome string) {
			m.idempotency.WithLabelValues(oneOf(outcome, idempotencyOutcomes)).Inc()
		},
		OnRateLimit: func(decision, policy string) {
			m.rateLimit.WithLabelValues(oneOf(decision, rateLimitDecisions), oneOf(policy, policies)).Inc()
		},
		OnFleetSaturated: m.fleetSaturated.Inc,
		OnLeaseLost: func(lease string) {
			m.leasesLost.WithLabelValues(oneOf(lease, leases)).Inc()
		},
	}
}

// PlanSize is the plan_size label of a plan of n changes.
func PlanSize(n int) string {
	for _, b := range []int{1, 10, 100, 1000} {
		if n <= b {
			return strconv.Itoa(b)
		}
	}
	return "more"
}

func statusClass(status int) string {
	if status < 100 || status > 599 {
		return "other"
	}
	return strconv.Itoa(status/100) + "xx"
}

// The fixed sets of label values.
var (
	httpMethods         = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}
	idempotencyOutcomes = []string{"claimed", "replayed", "mismatch", "in_use", "store_unavailable"}
	rateLimitDecisions  = []string{"allowed", "limited", "failed_open"}
	policies            = []string{"", "config_plan", "config_plan_inflight", "config_preview", "config_preview_inflight"}
	leases              = []string{"idempotency", "inflight", "fleet"}
	// answerCodes are the error codes of the contract (§6, §9, §10).
	answerCodes = []string{
		"malformed_request", "unknown_field", "invalid_idempotency_key", "unauthenticated", "insufficient_permissions",
		"not_found", "idempotency_key_in_use", "idempotency_key_mismatch", "config_plan_not_applicable",
		"deletion_not_confirmed", "config_conflict", "conflict", "connection_in_use", "connection_test_required",
		"config_plan_expired", "request_too_large", "config_document_too_large", "validation_failed", "policy_conflict",
		"rate_limited", "internal_error", "not_implemented", "service_unavailable",
	}
)

func oneOf(v string, set []string) string {
	if slices.Contains(set, v) {
		return v
	}
	return "other"
}

// answerCode keeps a contract code; anything else was answered as a 500.
func answerCode(code string) string {
	if slices.Contains(answerCodes, code) {
		return code
	}
	return "internal_error"
}

func applyCode(outcome string) string {
	switch outcome {
	case "applied", "validated", "replayed":
		return outcome
	}
	return answerCode(outcome)
}

func planCode(outcome string) string {
	if outcome == "created" {
		return outcome
	}
	return answerCode(outcome)
}
