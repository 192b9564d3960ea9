package plans

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keenauth/configplans/canonjson"
	"github.com/keenauth/configplans/config"
)

// trickyStrings are strings the encoder must escape as encoding/json does.
var trickyStrings = []string{
	"", "plain", "<b>&amp;</b>", `quote " and \ backslash`, "tab\tnew\nline\rcr\bbs\fff", "\x00\x01\x1f\x7f",
	"ünïcödé ✓ 日本", "emoji 😀", "line\u2028sep\u2029para", "bad \xff utf8 \xc3", "\xed\xa0\x80 surrogate",
	"</script>", "~1/~0 pointer", "\u00e9\u0301",
}

func genString(rng *rand.Rand, extra []string) string {
	if len(extra) > 0 && rng.IntN(3) == 0 {
		return pick(rng, extra...)
	}
	if rng.IntN(2) == 0 {
		return pick(rng, trickyStrings...)
	}
	return "k" + strconv.Itoa(rng.IntN(1000))
}

// genValue is a random JSON value, as a spec or a diff value holds.
func genValue(rng *rand.Rand, depth int, extra []string) any {
	switch n := rng.IntN(8); {
	case depth > 2 || n == 0:
		return genString(rng, extra)
	case n == 1:
		return json.Number(strconv.Itoa(rng.IntN(2000) - 1000))
	case n == 2:
		return json.Number("1.5e-7")
	case n == 3:
		return pick[any](rng, nil, true, false)
	case n == 4:
		l := make([]any, rng.IntN(4))
		for i := range l {
			l[i] = genValue(rng, depth+1, extra)
		}
		return l
	default:
		m := map[string]any{}
		for range rng.IntN(5) {
			m[genString(rng, extra)] = genValue(rng, depth+1, extra)
		}
		return m
	}
}

func genRaw(rng *rand.Rand, extra []string) json.RawMessage {
	switch rng.IntN(6) {
	case 0:
		return nil
	case 1:
		return config.CanonicalJSON(genAPI(rng))
	case 2:
		return config.CanonicalJSON(genApplication(rng))
	default:
		return config.CanonicalJSON(genValue(rng, 0, extra))
	}
}

func genIntPtr(rng *rand.Rand) *int {
	if rng.IntN(2) == 0 {
		return nil
	}
	n := rng.IntN(100)
	return &n
}

func genStringPtr(rng *rand.Rand, extra []string) *string {
	if rng.IntN(2) == 0 {
		return nil
	}
	s := genString(rng, extra)
	return &s
}

func genDiff(rng *rand.Rand, extra []string) []config.DiffOp {
	if rng.IntN(5) == 0 {
		return nil
	}
	ops := make([]config.DiffOp, rng.IntN(4))
	for i := range ops {
		ops[i] = config.DiffOp{Op: pick(rng, "add", "remove", "replace", "move", genString(rng, extra)), Path: genString(rng, extra),
			Old: genRaw(rng, extra), Value: genRaw(rng, extra)}
		if rng.IntN(6) == 0 {
			ops[i].Old = json.RawMessage("null")
		}
	}
	return ops
}

func genTime(rng *rand.Rand) Time {
	zone := time.FixedZone("x", (rng.IntN(25)-12)*3600)
	return Time(time.Unix(int64(rng.IntN(4_000_000_000)), int64(rng.IntN(1e9))).In(zone))
}

func genKinds(rng *rand.Rand, extra []string) []config.Kind {
	switch rng.IntN(4) {
	case 0:
		return nil
	case 1:
		return []config.Kind{}
	}
	ks := make([]config.Kind, 1+rng.IntN(3))
	for i := range ks {
		ks[i] = config.Kind(genString(rng, extra))
	}
	return ks
}

// genPlan is a random plan: every member set or not, nil and empty slices,
// specs and strings that need escaping; extra are strings to use too.
func genPlan(rng *rand.Rand, extra []string) *Plan {
	p := &Plan{ID: genString(rng, extra), Object: "config_plan", EnvironmentID: genString(rng, extra), Status: Status(genString(rng, extra)),
		Prune: rng.IntN(2) == 0, Types: genKinds(rng, extra), ReferencingTypes: genKinds(rng, extra), RequiresSPHost: rng.IntN(2) == 0,
		Summary:   Summary{Create: rng.IntN(1000), Update: rng.IntN(10), Delete: rng.IntN(3), NoOp: rng.IntN(5)},
		CreatedAt: genTime(rng), ExpiresAt: genTime(rng), RevisionID: genStringPtr(rng, extra), CreatedBy: genString(rng, extra),
		RebasedFrom: genStringPtr(rng, extra)}
	if rng.IntN(2) == 0 {
		t := genTime(rng)
		p.AppliedAt = &t
	}
	if n := rng.IntN(6); n > 0 {
		p.Changes = make([]Change, n-1)
		for i := range p.Changes {
			c := Change{Kind: config.Kind(genString(rng, extra)), Key: genString(rng, extra), Action: pick(rng, ActionCreate, ActionUpdate, ActionDelete, ActionNoOp),
				BaseVersion: genIntPtr(rng), Spec: genRaw(rng, extra), Diff: genDiff(rng, extra), RequiresSecret: rng.IntN(2) == 0,
				WritesMaterial: rng.IntN(3) == 0, KeepsMaterial: rng.IntN(3) == 0}
			if rng.IntN(2) == 0 {
				c.SecretRef = genString(rng, extra)
			}
			switch rng.IntN(3) {
			case 0:
				c.ResourceID = json.RawMessage("null")
			case 1:
				c.ResourceID = config.CanonicalJSON(genString(rng, extra))
			}
			p.Changes[i] = c
		}
	}
	if n := rng.IntN(4); n > 0 {
		p.Warnings = make([]Warning, n-1)
		for i := range p.Warnings {
			p.Warnings[i] = Warning{Code: config.Code(genString(rng, extra)), Target: genString(rng, extra), Pointer: genString(rng, extra), Detail: genString(rng, extra)}
		}
	}
	if n := rng.IntN(4); n > 0 {
		p.RequiredSecrets = make([]string, n-1)
		for i := range p.RequiredSecrets {
			p.RequiredSecrets[i] = genString(rng, extra)
		}
	}
	if n := rng.IntN(4); n > 0 {
		p.Moved = make(MovedList, n-1)
		for i := range p.Moved {
			if rng.IntN(3) == 0 {
				p.Moved[i] = Moved{Kind: config.Kind(genString(rng, extra)), Code: config.CodeTypeChanged}
			} else {
				p.Moved[i] = Moved{Kind: config.Kind(genString(rng, extra)), Key: genStringPtr(rng, extra), VersionThen: genIntPtr(rng),
					VersionNow: genIntPtr(rng), Diff: genDiff(rng, extra)}
			}
		}
	}
	return p
}

// tokens reads a JSON text as its sequence of tokens: equal sequences are
// equal values with their object members in the same order.
func tokens(t *testing.T, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out []string
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("not JSON: %v\n%s", err, b)
		}
		out = append(out, fmt.Sprintf("%T %v", tok, tok))
	}
}

// checkSameJSON holds the appended JSON to encoding/json's: the same
// values, members in the same order, and once <, >, & and U+2028/U+2029
// are escaped as json.Marshal escapes them, the same bytes.
func checkSameJSON(t *testing.T, context string, got, want []byte) bool {
	t.Helper()
	gt, wt := tokens(t, got), tokens(t, want)
	if strings.Join(gt, "\n") != strings.Join(wt, "\n") {
		t.Errorf("%s: appended JSON is another value or order\ngot  %s\nwant %s", context, got, want)
		return false
	}
	var ge, we bytes.Buffer
	json.HTMLEscape(&ge, got)
	json.HTMLEscape(&we, want)
	if !bytes.Equal(ge.Bytes(), we.Bytes()) {
		t.Errorf("%s: appended JSON differs in its bytes\ngot  %s\nwant %s", context, got, want)
		return false
	}
	return true
}

// checkPlanJSON checks every appender of p against encoding/json.
func checkPlanJSON(t *testing.T, context string, p *Plan) bool {
	t.Helper()
	want, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("%s: json.Marshal: %v", context, err)
	}
	if !checkSameJSON(t, context+", plan", p.AppendJSON(nil), want) {
		return false
	}
	if !checkWriteJSON(t, context, p) {
		return false
	}
	want, err = json.Marshal(PlanPreview{Plan: p})
	if err != nil {
		t.Fatalf("%s: json.Marshal of the preview: %v", context, err)
	}
	if !checkSameJSON(t, context+", preview", PlanPreview{Plan: p}.AppendJSON(nil), want) {
		return false
	}
	if !checkSameJSON(t, context+", records", appendChangeRecords(nil, p.Changes), config.MustJSON(changeRecords(p.Changes))) {
		return false
	}
	pg := Page[*Plan]{Data: []*Plan{p, p}, HasMore: p.Prune, NextCursor: p.RebasedFrom}
	want, _ = json.Marshal(pg)
	return checkSameJSON(t, context+", page", PlanPage(pg).AppendJSON(nil), want)
}

func TestPlanAppendJSON(t *testing.T) {
	t.Parallel()
	one, created := 1, Time(time.Date(2026, 12, 2, 3, 4, 5, 678_900_000, time.FixedZone("CET", 3600)))
	rev, src, key := "rev_1", "plan_0", "a<b>&c"
	spec := config.CanonicalJSON(map[string]any{"name": "<Orders & Co>", "note": "line\u2028sep", "n": json.Number("12")})
	tests := []struct {
		name string
		plan *Plan
	}{
		{"zero", &Plan{}},
		{"empty slices", &Plan{Types: []config.Kind{}, ReferencingTypes: []config.Kind{}, Changes: []Change{}, Warnings: []Warning{},
			RequiredSecrets: []string{}, Moved: MovedList{}}},
		{"a create", &Plan{ID: "plan_1", Object: "config_plan", EnvironmentID: "env_1", Status: StatusPlanned, Types: []config.Kind{config.KindAPI},
			ReferencingTypes: []config.Kind{}, Changes: []Change{{Kind: config.KindAPI, Key: key, Action: ActionCreate, Spec: spec,
				Diff: []config.DiffOp{{Op: "add", Path: "", Value: spec}}}}, Warnings: []Warning{}, RequiredSecrets: []string{},
			Summary: Summary{Create: 1}, CreatedAt: created, ExpiresAt: created, CreatedBy: "key_1", Moved: nil}},
		{"applied, with every optional member", &Plan{ID: "plan_2", Status: StatusApplied, AppliedAt: &created, RevisionID: &rev,
			RebasedFrom: &src, Changes: []Change{
				{Kind: config.KindConnection, Key: "c", Action: ActionUpdate, BaseVersion: &one, Spec: spec, RequiresSecret: true,
					SecretRef: "secret://c", ResourceID: json.RawMessage(`"con_1"`), WritesMaterial: true, KeepsMaterial: true,
					Diff: []config.DiffOp{{Op: "replace", Path: "/name", Old: json.RawMessage(`"x"`), Value: json.RawMessage(`"<y>"`)},
						{Op: "remove", Path: "/a~1b", Old: json.RawMessage(`null`)}, {Op: "remove", Path: "/old"}, {Op: "replace", Path: "/v"}}},
				{Kind: config.KindConnection, Key: "d", Action: ActionDelete, ResourceID: json.RawMessage("null"), Diff: []config.DiffOp{}},
			},
			Warnings: []Warning{{Code: config.CodeInvalid, Target: "api/x", Pointer: "/a", Detail: "\"quoted\" <tag>\n"}},
			Moved:    MovedList{{Kind: config.KindAPI, Key: &key, VersionThen: &one, Diff: nil}, {Kind: config.KindRole, Code: config.CodeTypeChanged}}}},
	}
	for _, tt := range tests {
		checkPlanJSON(t, tt.name, tt.plan)
	}
}

// TestPlanAppendJSONOfGeneratedPlans holds the appenders to encoding/json
// over random plans. CODEC_SEED=n replays a run.
func TestPlanAppendJSONOfGeneratedPlans(t *testing.T) {
	t.Parallel()
	seed := codecSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := range 300 {
		if !checkPlanJSON(t, fmt.Sprintf("CODEC_SEED=%d, case %d", seed, i), genPlan(rng, nil)) {
			return
		}
	}
}

func codecSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CODEC_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("CODEC_SEED: %v", err)
		}
	}
	return seed
}

func FuzzPlanAppendJSON(f *testing.F) {
	for _, s := range trickyStrings {
		f.Add(uint64(len(s)), s)
	}
	f.Fuzz(func(t *testing.T, seed uint64, s string) {
		rng := rand.New(rand.NewPCG(seed, 1))
		checkPlanJSON(t, fmt.Sprintf("seed %d, string %q", seed, s), genPlan(rng, []string{s}))
	})
}

func TestAppendStringAsEncodingJSON(t *testing.T) {
	t.Parallel()
	all := make([]byte, 0, 512)
	for c := range 256 {
		all = append(all, byte(c))
	}
	for _, s := range append(trickyStrings, string(all), "\xe2\x80", "\xe2\x80\xa8\xe2\x80\xa9x") {
		want, _ := config.Marshal(s)
		if got := canonjson.AppendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

// benchPlan is a plan like the benchmarks' P1: n creates of api specs of
// about 600 bytes (4 scopes with 100-character descriptions).
func benchPlan(n int) *Plan {
	created := Time(time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC))
	p := &Plan{ID: "plan_01", Object: "config_plan", EnvironmentID: "env_01", Status: StatusApplied, Types: []config.Kind{config.KindAPI},
		ReferencingTypes: []config.Kind{}, Warnings: []Warning{}, RequiredSecrets: []string{}, Summary: Summary{Create: n},
		CreatedAt: created, ExpiresAt: created, AppliedAt: &created, CreatedBy: "key_01", Changes: make([]Change, n)}
	for i := range p.Changes {
		key := fmt.Sprintf("api-%04d", i)
		scopes := make([]any, 4)
		for j := range scopes {
			scopes[j] = map[string]any{"value": fmt.Sprintf("scope:%d", j), "description": strings.Repeat("d", 100)}
		}
		spec := config.CanonicalJSON(map[string]any{"identifier": "https://api.example/" + key, "display_name": "API " + key, "scopes": scopes})
		p.Changes[i] = Change{Kind: config.KindAPI, Key: key, Action: ActionCreate, Spec: spec, Diff: []config.DiffOp{{Op: "add", Path: "", Value: spec}}}
	}
	return p
}

func BenchmarkPlanJSON(b *testing.B) {
	p := benchPlan(1000)
	b.Run("json.Marshal", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AppendJSON", func(b *testing.B) {
		for b.Loop() {
			p.AppendJSON(nil)
		}
	})
	b.Run("preview/json.Marshal", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(PlanPreview{Plan: p}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("preview/AppendJSON", func(b *testing.B) {
		for b.Loop() {
			PlanPreview{Plan: p}.AppendJSON(nil)
		}
	})
	b.Run("records/marshal", func(b *testing.B) {
		for b.Loop() {
			config.MustJSON(changeRecords(p.Changes))
		}
	})
	b.Run("records/append", func(b *testing.B) {
		for b.Loop() {
			appendChangeRecords(nil, p.Changes)
		}
	})
}

// TestPlanAnswerSplicesTheStoredChanges checks that the changes appended
// for the stored row are answered only when they are the answer's: not
// when a change writes or keeps material, nor for other changes.
func TestPlanAnswerSplicesTheStoredChanges(t *testing.T) {
	t.Parallel()
	seed := codecSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := range 300 {
		p := genPlan(rng, nil)
		fresh := *p
		newPlanRow(p)
		_, kept := p.changesJSON.of(p.Changes)
		material := slices.ContainsFunc(p.Changes, func(c Change) bool { return c.WritesMaterial || c.KeepsMaterial })
		if kept != (len(p.Changes) > 0 && !material) {
			t.Fatalf("CODEC_SEED=%d, case %d: changes kept %v, with %d changes (material: %v)", seed, i, kept, len(p.Changes), material)
		}
		if got, want := p.AppendJSON(nil), fresh.AppendJSON(nil); !bytes.Equal(got, want) {
			t.Fatalf("CODEC_SEED=%d, case %d: the answer with the stored changes\n%s\nwithout\n%s", seed, i, got, want)
		}
		if !checkWriteJSON(t, fmt.Sprintf("CODEC_SEED=%d, case %d, stored changes kept", seed, i), p) {
			return
		}
		if len(p.Changes) == 0 {
			continue
		}
		other := *p
		other.Changes = slices.Clone(p.Changes)
		other.Changes[0].Key = "another key"
		if got := other.AppendJSON(nil); !bytes.Contains(got, []byte(`"another key"`)) {
			t.Fatalf("CODEC_SEED=%d, case %d: a copy with other changes answered the kept ones\n%s", seed, i, got)
		}
	}
}

// changeRecords is the stored form of the changes as encoding/json writes
// it (marshal), the reference appendChangeRecords is held to.
func changeRecords(cs []Change) []changeRecord {
	out := make([]changeRecord, len(cs))
	for i, c := range cs {
		out[i] = changeRecord{Change: c, WritesMaterial: c.WritesMaterial, KeepsMaterial: c.KeepsMaterial}
	}
	return out
}

// checkWriteJSON checks that WriteJSON writes the bytes AppendJSON appends.
func checkWriteJSON(t *testing.T, context string, p *Plan) bool {
	t.Helper()
	var w countingWriter
	if err := p.WriteJSON(&w); err != nil {
		t.Fatalf("%s: WriteJSON: %v", context, err)
	}
	if want := p.AppendJSON(nil); !bytes.Equal(w.buf.Bytes(), want) {
		t.Errorf("%s: WriteJSON wrote\n%s\nAppendJSON appends\n%s", context, w.buf.Bytes(), want)
		return false
	}
	return true
}

type countingWriter struct {
	buf    bytes.Buffer
	writes int
	failAt int // the write that fails (1-based), 0 for none
}

func (w *countingWriter) Write(b []byte) (int, error) {
	w.writes++
	if w.writes == w.failAt {
		return 0, errors.New("the client went away")
	}
	return w.buf.Write(b)
}

// TestPlanWriteJSONWritesALargePlanInPiecesAsAppendJSONDoes: a plan of
// 2 MiB of changes is written in pieces of about 64 KiB, kept or not, and
// a failed write ends it with the error.
func TestPlanWriteJSONWritesALargePlanInPiecesAsAppendJSONDoes(t *testing.T) {
	t.Parallel()
	spec := config.CanonicalJSON(map[string]any{"description": strings.Repeat("x", 2000)})
	p := &Plan{ID: "plan_big", Object: "config_plan", Status: StatusApplied, Types: []config.Kind{config.KindAPI}}
	for i := range 1000 {
		p.Changes = append(p.Changes, Change{Kind: config.KindAPI, Key: fmt.Sprintf("k%04d", i), Action: ActionCreate, Spec: spec,
			Diff: []config.DiffOp{{Op: "add", Path: "", Value: spec}}})
	}
	want := p.AppendJSON(nil)
	var w countingWriter
	if err := p.WriteJSON(&w); err != nil || !bytes.Equal(w.buf.Bytes(), want) {
		t.Fatalf("WriteJSON: %v, %d bytes, want the %d of AppendJSON", err, w.buf.Len(), len(want))
	}
	if min, max := len(want)/(80<<10), len(want)/(60<<10)+2; w.writes < min || w.writes > max {
		t.Errorf("%d bytes in %d writes, want %d to %d (pieces of about 64 KiB)", len(want), w.writes, min, max)
	}
	kept := *p
	newPlanRow(&kept)
	if _, ok := kept.changesJSON.of(kept.Changes); !ok {
		t.Fatal("the stored changes were not kept")
	}
	w = countingWriter{}
	if err := kept.WriteJSON(&w); err != nil || !bytes.Equal(w.buf.Bytes(), want) || w.writes != 3 {
		t.Errorf("WriteJSON of kept changes: %v, %d bytes in %d writes, want the %d of AppendJSON in 3", err, w.buf.Len(), w.writes, len(want))
	}
	for _, failAt := range []int{1, 2, 5} {
		w = countingWriter{failAt: failAt}
		if err := p.WriteJSON(&w); err == nil || w.writes != failAt {
			t.Errorf("a failed write %d: WriteJSON = %v after %d writes, want the error at once", failAt, err, w.writes)
		}
	}
}
