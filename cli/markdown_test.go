package cli

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

func intp(n int) *int { return &n }

// bigPlan is a planned plan of n api creations, the i-th with a
// description of size(i) bytes, and one update.
func bigPlan(n int, size func(i int) int) *plan {
	pl := &plan{ID: "cfgp_01m4qpqtywfs7930tb6kqn5rc5", EnvironmentID: "env_01m4qpqtywfs7930tb6kqn5rc5", Status: "planned",
		Types: []string{"api"}, ExpiresAt: "2026-12-04T00:00:00.000Z"}
	for i := 0; i < n; i++ {
		spec, _ := json.Marshal(map[string]any{"identifier": fmt.Sprintf("https://api.example/%d", i), "description": strings.Repeat("d", size(i))})
		pl.Changes = append(pl.Changes, change{Kind: "api", Key: fmt.Sprintf("api-%04d", i), Action: "create",
			Diff: []diffOp{{Op: "add", Path: "", Value: spec}}})
		pl.Summary.Create++
	}
	pl.Changes = append(pl.Changes, change{Kind: "api", Key: "kept", Action: "update", BaseVersion: intp(3),
		Diff: []diffOp{{Op: "replace", Path: "/token_lifetime_seconds", Old: json.RawMessage(`3600`), Value: json.RawMessage(`7200`)}}})
	pl.Summary.Update++
	for i := 0; i < 5; i++ {
		pl.Changes = append(pl.Changes, change{Kind: "role", Key: fmt.Sprintf("r%d", i), Action: "no_op"})
		pl.Summary.NoOp++
	}
	return pl
}

func TestMarkdownLeavesOutTheLargestChangesPastTheLimit(t *testing.T) {
	t.Parallel()
	// 400 creations of 100 to ~1,300 bytes: far over 60,000 bytes.
	pl := bigPlan(400, func(i int) int { return 100 + (i*37)%1200 })
	md := renderMarkdown(pl, markdownLimit)
	if len(md) > markdownLimit {
		t.Fatalf("%d bytes, over %d", len(md), markdownLimit)
	}
	if !strings.HasPrefix(md, "### Keenauth plan `cfgp_01m4qpqtywfs7930tb6kqn5rc5`: 400 to create, 1 to update, 0 to delete, 5 unchanged\n") {
		t.Errorf("first line: %q", strings.SplitN(md, "\n", 2)[0])
	}
	m := regexp.MustCompile(`\*\*(\d+) of 401 changes left out\*\* \(the largest\), to keep this comment under 60,000 characters: see every change with ` +
		"`keenauth config show cfgp_01m4qpqtywfs7930tb6kqn5rc5`").FindStringSubmatch(md)
	if m == nil {
		t.Fatalf("no left-out line:\n%s", md[len(md)-2000:])
	}
	shown := strings.Count(md, "<details>")
	if fmt.Sprint(401-shown) != m[1] {
		t.Errorf("%d changes shown, the line says %s left out", shown, m[1])
	}
	// The kept ones are the smallest: every shown creation is smaller than
	// every left-out one.
	largestShown, smallestLeft := 0, 1<<30
	for i := 0; i < 400; i++ {
		size := 100 + (i*37)%1200
		if strings.Contains(md, fmt.Sprintf("<b>api/api-%04d</b>", i)) {
			largestShown = max(largestShown, size)
		} else {
			smallestLeft = min(smallestLeft, size)
		}
	}
	if largestShown > smallestLeft {
		t.Errorf("a change of %d bytes was shown while one of %d was left out", largestShown, smallestLeft)
	}
	if !strings.Contains(md, "<b>api/kept</b> (version 3)") || !strings.Contains(md, "! token_lifetime_seconds: 3600 → 7200") {
		t.Error("the small update was left out")
	}
	if !strings.Contains(md, "= 5 unchanged (`no_op`), not listed.") {
		t.Error("no count line for the unchanged resources")
	}
	// Deterministic: the same plan, the same bytes.
	if again := renderMarkdown(pl, markdownLimit); again != md {
		t.Error("a second rendering differs")
	}
	// Under the limit, nothing is left out.
	small := renderMarkdown(bigPlan(3, func(int) int { return 10 }), markdownLimit)
	if strings.Contains(small, "left out") || strings.Count(small, "<details>") != 4 {
		t.Errorf("a small plan lost changes:\n%s", small)
	}
}

func TestMarkdownStaysUnderTheLimitWithHugeWarningsAndSecrets(t *testing.T) {
	t.Parallel()
	pl := bigPlan(50, func(int) int { return 2000 })
	for i := 0; i < 3000; i++ {
		pl.Warnings = append(pl.Warnings, warning{Code: "deletion_requires_confirmation", Target: fmt.Sprintf("connection/c%04d", i),
			Detail: "Deleting this connection must be confirmed <b>now</b> *really*."})
		pl.RequiredSecrets = append(pl.RequiredSecrets, fmt.Sprintf("KEENAUTH_CONNECTION_C%04d_CLIENT_SECRET", i))
	}
	md := renderMarkdown(pl, markdownLimit)
	if len(md) > markdownLimit {
		t.Fatalf("%d bytes, over %d", len(md), markdownLimit)
	}
	for _, want := range []string{"**51 of 51 changes left out**", "- … and ", "(see them all with `keenauth config show cfgp_01m4qpqtywfs7930tb6kqn5rc5`)",
		"**Warnings** (3000):", "Deleting this connection must be confirmed &lt;b&gt;now&lt;/b&gt; \\*really\\*", "To apply: run the command that"} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q", want)
		}
	}
}

func TestMarkdownFencesOutlastBackticksInValues(t *testing.T) {
	t.Parallel()
	pl := &plan{ID: "cfgp_x", Status: "preview", Summary: summary{Update: 1}, Changes: []change{{Kind: "role", Key: "r", Action: "update",
		Diff: []diffOp{{Op: "replace", Path: "/description", Old: json.RawMessage(`"a"`), Value: json.RawMessage(`"` + "````</details>" + `"`)}}}}}
	md := renderMarkdown(pl, markdownLimit)
	if !strings.Contains(md, "`````diff\n! description: \"a\" → \"````</details>\"\n`````\n") {
		t.Errorf("fence:\n%s", md)
	}
	if !strings.HasPrefix(md, "### Keenauth plan preview: 0 to create, 1 to update, 0 to delete, 0 unchanged\n") {
		t.Errorf("preview first line:\n%s", md)
	}
}

func TestMarkdownShowsApprovalsOnlyWhenThePlanHasThem(t *testing.T) {
	t.Parallel()
	pl := bigPlan(1, func(int) int { return 1 })
	if md := renderMarkdown(pl, markdownLimit); strings.Contains(md, "Approvals") {
		t.Errorf("approvals shown for a plan without them:\n%s", md)
	}
	owner := "ana@shop.example"
	pl.ApprovalsRequired = intp(2)
	pl.Approvals = []approval{{APIKeyID: "key_1", Owner: &owner, ApprovedAt: "2026-12-03T10:00:00.000Z"}}
	pl.Warnings = []warning{{Code: "rule_approval", Target: "api/kept", Detail: "Needs two."}}
	pl.RequiredSecrets = []string{"KEENAUTH_X"}
	md := renderMarkdown(pl, markdownLimit)
	w, a, s := strings.Index(md, "**Warnings**"), strings.Index(md, "**Approvals needed:** 2; received 1 (ana@shop.example at 2026-12-03T10:00:00.000Z)."),
		strings.Index(md, "**Secrets the apply needs**")
	if w < 0 || a < w || s < a {
		t.Errorf("want warnings, approvals, secrets in this order:\n%s", md)
	}
}
