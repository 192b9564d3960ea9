package idempotency

import (
	"testing"
)

func TestFingerprint(t *testing.T) {
	t.Parallel()
	type input struct {
		secret   string
		method   string
		route    string
		params   map[string]string
		rawQuery string
		body     string
	}
	base := input{
		secret:   "s3cret",
		method:   "POST",
		route:    "/v1/config-plans/:plan_id",
		params:   map[string]string{"plan_id": "cfgp_01m4qpqtywfs7930tb6kqn5rc5:apply", "env": "env_1"},
		rawQuery: "validate_only=true&b=2",
		body:     `{"confirm_deletions":["connection/legacy"]}`,
	}
	fp := func(in input) string {
		return Fingerprint([]byte(in.secret), in.method, in.route, in.params, in.rawQuery, []byte(in.body))
	}
	want := fp(base)
	if len(want) != 64 {
		t.Fatalf("fingerprint %q is not 64 hex characters", want)
	}

	t.Run("stable", func(t *testing.T) {
		t.Parallel()
		same := []struct {
			name string
			in   input
		}{
			{"identical", base},
			{"queryKeysReordered", with(base, func(in *input) { in.rawQuery = "b=2&validate_only=true" })},
			{"queryEscapingCanonicalised", with(base, func(in *input) { in.rawQuery = "validate%5Fonly=true&b=%32" })},
			{"paramsMapRebuilt", with(base, func(in *input) {
				in.params = map[string]string{"env": "env_1", "plan_id": "cfgp_01m4qpqtywfs7930tb6kqn5rc5:apply"}
			})},
		}
		for _, tt := range same {
			if got := fp(tt.in); got != want {
				t.Errorf("%s: fingerprint %s, want %s", tt.name, got, want)
			}
		}
	})

	t.Run("differs", func(t *testing.T) {
		t.Parallel()
		different := []struct {
			name string
			in   input
		}{
			{"secret", with(base, func(in *input) { in.secret = "other" })},
			{"method", with(base, func(in *input) { in.method = "PUT" })},
			{"route", with(base, func(in *input) { in.route = "/v1/config-revisions/:id" })},
			{"paramValue", with(base, func(in *input) { in.params = map[string]string{"plan_id": "cfgp_other", "env": "env_1"} })},
			{"paramName", with(base, func(in *input) {
				in.params = map[string]string{"id": "cfgp_01m4qpqtywfs7930tb6kqn5rc5:apply", "env": "env_1"}
			})},
			{"paramMissing", with(base, func(in *input) { in.params = map[string]string{"plan_id": "cfgp_01m4qpqtywfs7930tb6kqn5rc5:apply"} })},
			{"queryValue", with(base, func(in *input) { in.rawQuery = "validate_only=false&b=2" })},
			{"queryValueOrderOfOneKey", with(base, func(in *input) { in.rawQuery = "validate_only=true&b=2&b=3" })},
			{"queryEmpty", with(base, func(in *input) { in.rawQuery = "" })},
			{"body", with(base, func(in *input) { in.body = `{"confirm_deletions":["connection/other"]}` })},
			{"bodyEmpty", with(base, func(in *input) { in.body = "" })},
		}
		seen := map[string]string{want: "base"}
		for _, tt := range different {
			got := fp(tt.in)
			if prev, dup := seen[got]; dup {
				t.Errorf("%s: fingerprint equals the one of %s", tt.name, prev)
			}
			seen[got] = tt.name
		}
	})

	t.Run("fieldBoundariesAreUnambiguous", func(t *testing.T) {
		t.Parallel()
		a := Fingerprint(nil, "POST", "/v1/x", map[string]string{"a": "bc"}, "", []byte("d"))
		b := Fingerprint(nil, "POST", "/v1/x", map[string]string{"ab": "c"}, "", []byte("d"))
		c := Fingerprint(nil, "POST", "/v1/xa", map[string]string{}, "", []byte("bcd"))
		d := Fingerprint(nil, "POS", "T/v1/x", nil, "", []byte("d"))
		e := Fingerprint(nil, "POST", "/v1/x", nil, "", []byte("d"))
		seen := map[string]bool{}
		for _, f := range []string{a, b, c, d, e} {
			if seen[f] {
				t.Fatalf("two different requests share fingerprint %s", f)
			}
			seen[f] = true
		}
	})

	t.Run("nilAndEmptyAreTheSame", func(t *testing.T) {
		t.Parallel()
		a := Fingerprint([]byte("k"), "POST", "/v1/config-plans", nil, "", nil)
		b := Fingerprint([]byte("k"), "POST", "/v1/config-plans", map[string]string{}, "", []byte{})
		if a != b {
			t.Errorf("nil and empty params/body differ: %s != %s", a, b)
		}
	})

	t.Run("unparsableQueryDiffersFromCanonical", func(t *testing.T) {
		t.Parallel()
		bad := Fingerprint([]byte("k"), "POST", "/v1/x", nil, "a=%zz", nil)
		if bad == Fingerprint([]byte("k"), "POST", "/v1/x", nil, "", nil) {
			t.Error("an unparsable query fingerprints like an empty one")
		}
		if bad != Fingerprint([]byte("k"), "POST", "/v1/x", nil, "a=%zz", nil) {
			t.Error("an unparsable query is not stable")
		}
	})
}

func with[T any](v T, change func(*T)) T {
	change(&v)
	return v
}

// TestFingerprintEncodingIsStable pins fingerprints computed by the first
// encoding: applied plans keep them (SPEC §9), so a change of the bytes
// hashed must come with a new fingerprintVersion, never silently.
func TestFingerprintEncodingIsStable(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		got  string
		want string
	}{
		{"everything", Fingerprint([]byte("s3cret"), "POST", "/v1/config-plans/:plan_id",
			map[string]string{"plan_id": "cfgp_01m4qpqtywfs7930tb6kqn5rc5:apply", "env": "env_1"}, "validate_only=true&b=2",
			[]byte(`{"confirm_deletions":["connection/legacy"]}`)), "a5ea1d4955bbdf2fe7745ab659ec9c539dc57bacba61048a8a2d21477cb3641f"},
		{"an apply", Fingerprint([]byte("bench-idempotency-secret"), "POST", "/v1/config-plans/:id",
			map[string]string{"id": "cfgp_01m4qpqtywfs7930tb6kqn5rc5:apply"}, "", []byte(`{}`)),
			"125d891708b8b825cd7aaee5813ff5f18af5c1f264ef86b9c42dacc4222bcf15"},
		{"unparsable query", Fingerprint(nil, "POST", "/v1/x", nil, "a=%zz", nil), "2d14f94b368103b5d008a38d9d1056cadb9c3c0424f1dba3403d8a2e3a5680a0"},
		{"large body", Fingerprint([]byte("k"), "POST", "/v1/config-plans", nil, "", make([]byte, 70000)),
			"86b027d2a72f130a9f16985b156b8b1c9c1aa88e8dbf5a64e9fc1b398545e354"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: fingerprint %s, want %s", tt.name, tt.got, tt.want)
		}
	}
}

func BenchmarkFingerprint(b *testing.B) {
	params := map[string]string{"id": "cfgp_01m4qpqtywfs7930tb6kqn5rc5:apply"}
	b.ReportAllocs()
	for b.Loop() {
		Fingerprint([]byte("bench-idempotency-secret"), "POST", "/v1/config-plans/:id", params, "", []byte(`{}`))
	}
}
