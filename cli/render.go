package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// The API's objects, as far as the human output reads them. --json prints
// the answer itself, so nothing is lost by reading only these members.

type plan struct {
	ID              string    `json:"id"`
	EnvironmentID   string    `json:"environment_id"`
	Status          string    `json:"status"`
	Prune           bool      `json:"prune"`
	Types           []string  `json:"types"`
	Changes         []change  `json:"changes"`
	Warnings        []warning `json:"warnings"`
	RequiredSecrets []string  `json:"required_secrets"`
	RequiresSPHost  bool      `json:"requires_sp_host"`
	Summary         summary   `json:"summary"`
	CreatedAt       string    `json:"created_at"`
	ExpiresAt       string    `json:"expires_at"`
	AppliedAt       *string   `json:"applied_at"`
	RevisionID      *string   `json:"revision_id"`
	RebasedFrom     *string   `json:"rebased_from"`
	Moved           []moved   `json:"moved"`
	// ApprovalsRequired and Approvals are read when the API sends them
	// (approvals of a plan; absent: nil).
	ApprovalsRequired *int       `json:"approvals_required"`
	Approvals         []approval `json:"approvals"`
	Rejection         *rejection `json:"rejection"`
	// rebasedAs are the plans that rebased this one, when looked up.
	rebasedAs []string
}

type approval struct {
	APIKeyID   string  `json:"api_key_id"`
	Owner      *string `json:"owner"`
	ApprovedAt string  `json:"approved_at"`
	Comment    *string `json:"comment"`
}

// who names the approver: its key's owner, or the key.
func (ap approval) who() string {
	if ap.Owner != nil {
		return *ap.Owner
	}
	return ap.APIKeyID
}

// approvalsReceived counts the people who approved, as the API does: keys
// of one owner count once, a key without owner alone.
func (pl *plan) approvalsReceived() int {
	seen := map[string]bool{}
	for _, ap := range pl.Approvals {
		if ap.Owner != nil {
			seen["owner "+*ap.Owner] = true
		} else {
			seen["key "+ap.APIKeyID] = true
		}
	}
	return len(seen)
}

// approvalsMissing is how many more approvals an apply needs now.
func (pl *plan) approvalsMissing() int {
	if pl.ApprovalsRequired == nil {
		return 0
	}
	return *pl.ApprovalsRequired - pl.approvalsReceived()
}

// renderApprovals writes "Approvals: 1 of 2" and each approval, when the
// plan needs some or has some.
func renderApprovals(w io.Writer, pl *plan) {
	need := 0
	if pl.ApprovalsRequired != nil {
		need = *pl.ApprovalsRequired
	}
	if need == 0 && len(pl.Approvals) == 0 {
		return
	}
	fmt.Fprintf(w, "\nApprovals: %d of %d\n", pl.approvalsReceived(), need)
	for _, ap := range pl.Approvals {
		line := "  " + ap.who() + " at " + ap.ApprovedAt
		if ap.Comment != nil && *ap.Comment != "" {
			line += ": " + *ap.Comment
		}
		fmt.Fprintln(w, line)
	}
	if pl.Rejection != nil {
		fmt.Fprintf(w, "Rejected by %s at %s: %s\n", pl.Rejection.who(), pl.Rejection.RejectedAt, pl.Rejection.Comment)
	}
}

// rejection is the rejection of a rejected plan.
type rejection struct {
	APIKeyID   string  `json:"api_key_id"`
	Owner      *string `json:"owner"`
	RejectedAt string  `json:"rejected_at"`
	Comment    string  `json:"comment"`
}

func (r rejection) who() string {
	if r.Owner != nil {
		return *r.Owner
	}
	return r.APIKeyID
}

// moved is what moved since the source of a rebase was planned: a
// resource (Key set) or a type whose content changed (Key nil).
type moved struct {
	Kind        string   `json:"kind"`
	Key         *string  `json:"key"`
	VersionThen *int     `json:"version_then"`
	VersionNow  *int     `json:"version_now"`
	Diff        []diffOp `json:"diff"`
	Code        string   `json:"code"`
}

// revisionDiff is a revision beside the configuration now.
type revisionDiff struct {
	RevisionID string `json:"revision_id"`
	Resources  []struct {
		Kind          string   `json:"kind"`
		Key           string   `json:"key"`
		VersionBefore *int     `json:"version_before"`
		VersionNow    *int     `json:"version_now"`
		Diff          []diffOp `json:"diff"`
	} `json:"resources"`
}

type change struct {
	Kind           string          `json:"kind"`
	Key            string          `json:"key"`
	Action         string          `json:"action"`
	BaseVersion    *int            `json:"base_version"`
	Spec           json.RawMessage `json:"spec"`
	Diff           []diffOp        `json:"diff"`
	RequiresSecret bool            `json:"requires_secret"`
	SecretRef      string          `json:"secret_ref"`
	ResourceID     *string         `json:"resource_id"`
}

func (c change) ref() string { return c.Kind + "/" + c.Key }

type diffOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Old   json.RawMessage `json:"old"` // absent (nil) from plans stored before the API wrote it
	Value json.RawMessage `json:"value"`
}

type warning struct {
	Code    string `json:"code"`
	Target  string `json:"target"`
	Pointer string `json:"pointer"`
	Detail  string `json:"detail"`
	// Rule names the guardrail rule of a rule_warning or a rule_approval.
	Rule string `json:"rule"`
}

type summary struct {
	Create int `json:"create"`
	Update int `json:"update"`
	Delete int `json:"delete"`
	NoOp   int `json:"no_op"`
}

type counts struct {
	Created   int `json:"created"`
	Updated   int `json:"updated"`
	Deleted   int `json:"deleted"`
	Unchanged int `json:"unchanged"`
}

type revision struct {
	ID        string   `json:"id"`
	PlanID    string   `json:"plan_id"`
	CreatedAt string   `json:"created_at"`
	ExpiresAt string   `json:"expires_at"`
	Types     []string `json:"types"`
	Counts    counts   `json:"counts"`
	Resources []struct {
		Kind          string          `json:"kind"`
		Key           string          `json:"key"`
		Action        string          `json:"action"`
		VersionBefore *int            `json:"version_before"`
		SpecBefore    json.RawMessage `json:"spec_before"`
	} `json:"resources"`
}

type logEntry struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	CreatedAt  string          `json:"created_at"`
	PlanID     *string         `json:"plan_id"`
	RevisionID *string         `json:"revision_id"`
	Data       json.RawMessage `json:"data"`
	Actor      struct {
		APIKeyID string `json:"api_key_id"`
	} `json:"actor"`
}

type page[T any] struct {
	Data       []T     `json:"data"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

// renderChanges writes every change with its diff, in the plan's order.
// Unchanged (no_op) resources are one count line at the end unless
// showUnchanged: a plan over thousands of resources that changes two
// reads as two changes, not pages of "= no_op".
func renderChanges(w io.Writer, p palette, changes []change, showUnchanged bool) {
	if len(changes) == 0 {
		fmt.Fprintln(w, "  (no changes)")
		return
	}
	unchanged := 0
	for _, c := range changes {
		if c.Action == "no_op" && !showUnchanged {
			unchanged++
			continue
		}
		var head string
		switch c.Action {
		case "create":
			head = p.green("+ create")
		case "update":
			head = p.yellow("~ update")
		case "delete":
			head = p.red("- delete")
		default:
			head = p.dim("= " + padRight(c.Action, 6))
		}
		var notes []string
		if c.ResourceID != nil {
			notes = append(notes, *c.ResourceID)
		}
		if c.BaseVersion != nil {
			notes = append(notes, "version "+strconv.Itoa(*c.BaseVersion))
		}
		line := "  " + head + "  " + p.bold(c.ref())
		if len(notes) > 0 {
			line += "  " + p.dim("("+strings.Join(notes, ", ")+")")
		}
		fmt.Fprintln(w, line)
		if c.Action == "create" || c.Action == "update" || c.Action == "delete" {
			for _, l := range diffLines(c.Diff) {
				fmt.Fprintln(w, "      "+colourDiffLine(p, l))
			}
		}
		if c.RequiresSecret && c.SecretRef != "" {
			fmt.Fprintln(w, "      needs secret "+c.SecretRef)
		}
	}
	if unchanged > 0 {
		fmt.Fprintln(w, p.dim(fmt.Sprintf("  = %d unchanged (not listed; --show-unchanged lists them)", unchanged)))
	}
}

// hasChanges reports a change other than no_op.
func (pl *plan) hasChanges() bool {
	for _, c := range pl.Changes {
		if c.Action != "no_op" {
			return true
		}
	}
	return false
}

func colourDiffLine(p palette, l string) string {
	switch l[0] {
	case '+':
		return p.green(l)
	case '-':
		return p.red(l)
	case '~':
		return p.yellow(l)
	}
	return l
}

func padRight(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return s + strings.Repeat(" ", n-len(s))
}

// diffLines renders diff operations readably: "+ path: value" for an add,
// "- path: old" for a remove, "~ path: old → new" for a replace. An added or
// removed object is spelled out member by member, so a created resource
// reads as a list of its fields and a deleted one as the fields it had; an
// element of a list (a path ending in an index) is one line, whatever it
// holds, as are lists and scalars, written as compact JSON. An op without
// old (from a plan stored before the API recorded it) reads "- path" and
// "~ path: new".
func diffLines(ops []diffOp) []string {
	var out []string
	for _, op := range ops {
		tokens := pointerTokens(op.Path)
		switch op.Op {
		case "add":
			for _, l := range leaves(tokens, op.Value) {
				out = append(out, "+ "+l)
			}
		case "remove":
			if op.Old == nil {
				out = append(out, "- "+readablePath(tokens))
				continue
			}
			for _, l := range leaves(tokens, op.Old) {
				out = append(out, "- "+l)
			}
		case "replace":
			l := "~ " + readablePath(tokens) + ": "
			if op.Old != nil {
				l += compact(op.Old) + " → "
			}
			out = append(out, l+compact(op.Value))
		default:
			out = append(out, "? "+op.Op+" "+readablePath(tokens)+": "+compact(op.Value))
		}
	}
	return out
}

// leaves spells out value at path: one "path: value" line per member of
// an object (recursively), one line for anything else and for an element
// of a list.
func leaves(tokens []string, value json.RawMessage) []string {
	var obj map[string]json.RawMessage
	if v := bytes.TrimSpace(value); len(v) > 0 && v[0] == '{' && !endsAtIndex(tokens) && json.Unmarshal(v, &obj) == nil && len(obj) > 0 {
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var out []string
		for _, k := range keys {
			out = append(out, leaves(append(tokens[:len(tokens):len(tokens)], k), obj[k])...)
		}
		return out
	}
	return []string{readablePath(tokens) + ": " + compact(value)}
}

// endsAtIndex reports a path to an element of a list.
func endsAtIndex(tokens []string) bool {
	if len(tokens) == 0 {
		return false
	}
	_, err := strconv.Atoi(tokens[len(tokens)-1])
	return err == nil
}

// pointerTokens splits an RFC 6901 JSON pointer into unescaped tokens.
func pointerTokens(ptr string) []string {
	if ptr == "" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, t := range parts {
		parts[i] = unescapeToken(t)
	}
	return parts
}

// readablePath writes tokens as field.sub[2].name; the whole value is
// "(all)".
func readablePath(tokens []string) string {
	if len(tokens) == 0 {
		return "(all)"
	}
	var b strings.Builder
	for i, t := range tokens {
		if _, err := strconv.Atoi(t); err == nil {
			b.WriteString("[" + t + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(t)
	}
	return b.String()
}

// compact writes a JSON value on one line, object members sorted, so the
// same value always reads the same.
func compact(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "null"
	}
	if plainScalar(v) {
		return string(v)
	}
	return reencode(v)
}

// reencode is compact's general case: v decoded (numbers kept as written)
// and encoded again, object members sorted.
func reencode(v json.RawMessage) string {
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		return string(v)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x); err != nil {
		return string(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// plainScalar reports a JSON number, true, false, null, or a string
// without escapes whose text the encoder would write back byte for byte
// (valid UTF-8, no U+2028 or U+2029): compact writes it as it is, without
// decoding and encoding it again (a diff's values are mostly such).
func plainScalar(v []byte) bool {
	switch c := v[0]; {
	case c == '"':
		return len(v) >= 2 && v[len(v)-1] == '"' && bytes.IndexByte(v[1:len(v)-1], '"') < 0 &&
			bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) &&
			!bytes.Contains(v, []byte("\u2028")) && !bytes.Contains(v, []byte("\u2029"))
	case c == '-' || (c >= '0' && c <= '9'):
		return json.Valid(v)
	default:
		s := string(v)
		return s == "true" || s == "false" || s == "null"
	}
}

func (s summary) String() string {
	return fmt.Sprintf("%d to create, %d to update, %d to delete, %d unchanged", s.Create, s.Update, s.Delete, s.NoOp)
}

func (c counts) String() string {
	return fmt.Sprintf("%d created, %d updated, %d deleted, %d unchanged", c.Created, c.Updated, c.Deleted, c.Unchanged)
}

func (c counts) short() string {
	return fmt.Sprintf("+%d ~%d -%d =%d", c.Created, c.Updated, c.Deleted, c.Unchanged)
}

func (s summary) short() string {
	return fmt.Sprintf("+%d ~%d -%d =%d", s.Create, s.Update, s.Delete, s.NoOp)
}

// deletionsToConfirm are the deletions the plan warns must be confirmed.
func (pl *plan) deletionsToConfirm() []string {
	var out []string
	for _, w := range pl.Warnings {
		if w.Code == "deletion_requires_confirmation" {
			out = append(out, w.Target)
		}
	}
	return out
}

// applyCommand is the command that applies the plan as it stands.
func (pl *plan) applyCommand() string {
	parts := []string{"keenauth config apply", pl.ID}
	for _, d := range pl.deletionsToConfirm() {
		parts = append(parts, "--confirm-deletion", d)
	}
	if len(pl.RequiredSecrets) > 0 {
		parts = append(parts, "--secrets-from-env")
	}
	if pl.RequiresSPHost {
		parts = append(parts, "--sp-host", "<host>")
	}
	return strings.Join(parts, " ")
}

// renderPlan writes a plan for review: the changes and their diffs, the
// summary, the warnings, the secrets the apply needs, and what to run next.
func renderPlan(w io.Writer, p palette, pl *plan, showUnchanged bool) {
	if pl.Status == "preview" {
		fmt.Fprintf(w, "%s for %s (preview: nothing was stored, so there is no plan id)\n", p.bold("Plan preview"), pl.EnvironmentID)
	} else {
		fmt.Fprintf(w, "%s %s for %s (%s, expires %s)\n", p.bold("Plan"), p.bold(pl.ID), pl.EnvironmentID, pl.Status, pl.ExpiresAt)
	}
	types := strings.Join(pl.Types, ", ")
	if pl.Prune {
		types += " (prune: resources the document leaves out are deleted)"
	}
	fmt.Fprintf(w, "Types: %s\n\n", types)
	if pl.RebasedFrom != nil {
		renderMoved(w, p, *pl.RebasedFrom, pl.Moved)
	}
	renderChanges(w, p, pl.Changes, showUnchanged)
	fmt.Fprintf(w, "\nSummary: %s.\n", pl.Summary)
	renderApprovals(w, pl)
	if len(pl.Warnings) > 0 {
		fmt.Fprintf(w, "\n%s\n", p.yellow("Warnings:"))
		for _, wn := range pl.Warnings {
			code := wn.Code
			if wn.Rule != "" {
				code += " " + wn.Rule
			}
			fmt.Fprintf(w, "  %s %s: %s (%s)\n", p.yellow("!"), wn.Target, strings.TrimSuffix(wn.Detail, "."), code)
		}
		if slices.ContainsFunc(pl.Warnings, func(wn warning) bool { return wn.Code == "resource_omitted" }) {
			fmt.Fprintln(w, "  A resource left out of the document is left unchanged: to delete it, write null for it in the file, or plan with --prune.")
		}
		if slices.ContainsFunc(pl.Warnings, func(wn warning) bool { return wn.Code == "reverts_moved_change" }) {
			fmt.Fprintln(w, "  This rebase writes back values that changed since its source was planned (see Moved above): edit the document and plan it instead if those changes must stay.")
		}
	}
	if len(pl.RequiredSecrets) > 0 {
		fmt.Fprintln(w, "\nSecrets the apply needs (--secrets-from-env reads each from the environment variable of that name):")
		for _, s := range pl.RequiredSecrets {
			fmt.Fprintln(w, "  "+s)
		}
	}
	if pl.RequiresSPHost {
		fmt.Fprintln(w, "\nThe apply writes OIDC material: --sp-host names the service-provider host of the callback URL https://<host>/sso/<connection id>/callback.")
	}
	switch pl.Status {
	case "preview":
		if pl.Summary.Create+pl.Summary.Update+pl.Summary.Delete == 0 {
			fmt.Fprintln(w, "\nNo changes: the configuration already matches the document.")
			return
		}
		fmt.Fprintln(w, "\nThis was a preview: nothing was stored. To create this plan and apply it, run the same command without --preview.")
	case "planned":
		if pl.Summary.Create+pl.Summary.Update+pl.Summary.Delete == 0 {
			fmt.Fprintln(w, "\nNo changes: the configuration already matches the document.")
			return
		}
		if need := pl.approvalsMissing(); need > 0 {
			fmt.Fprintf(w, "\nThe plan needs %d more approval(s) before it can be applied, each by a person other than its creator:\n  keenauth config approve %s\n", need, pl.ID)
		}
		fmt.Fprintf(w, "\nNext, to apply this plan:\n  %s\n", pl.applyCommand())
	case "applied":
		fmt.Fprintf(w, "\nApplied %s", deref(pl.AppliedAt))
		if pl.RevisionID != nil {
			fmt.Fprintf(w, "; revision %s keeps the configuration as it was before (undo with: keenauth revisions restore %s)", *pl.RevisionID, *pl.RevisionID)
		}
		fmt.Fprintln(w, ".")
	case "applying":
		fmt.Fprintln(w, "\nThis plan is being applied.")
	case "rejected":
		fmt.Fprintln(w, "\nThis plan was rejected: it can no longer be approved, applied or rebased. To plan changes again:\n  keenauth config plan -f FILE")
	default:
		if len(pl.rebasedAs) == 0 {
			fmt.Fprintf(w, "\nThis plan is %s and can no longer be applied. To plan the same changes against the configuration as it is now:\n  keenauth config rebase %s\n", pl.Status, pl.ID)
		} else {
			fmt.Fprintf(w, "\nThis plan is %s and can no longer be applied.\n", pl.Status)
		}
	}
	if n := len(pl.rebasedAs); n > 0 {
		last := pl.rebasedAs[n-1]
		fmt.Fprintf(w, "\nAlready rebased as %s", last)
		if n > 1 {
			fmt.Fprintf(w, " (its latest of %d rebases: %s)", n, strings.Join(pl.rebasedAs, ", "))
		}
		fmt.Fprintf(w, "; see it with: keenauth config show %s\n", last)
	}
}

// renderMoved writes what moved since the source of a rebase was planned:
// each resource with its versions and the diff from the spec the source
// was based on to the spec now, then each type whose content changed.
func renderMoved(w io.Writer, p palette, source string, ms []moved) {
	if len(ms) == 0 {
		fmt.Fprintf(w, "Rebased from %s: nothing it planned has moved since.\n\n", source)
		return
	}
	fmt.Fprintf(w, "Rebased from %s. Moved since it was planned (then → now):\n", source)
	for _, m := range ms {
		if m.Key == nil {
			fmt.Fprintf(w, "  %s %s  other resources of this type changed (%s)\n", p.yellow("!"), m.Kind, m.Code)
			continue
		}
		then, now := "did not exist", "gone"
		if m.VersionThen != nil {
			then = "version " + strconv.Itoa(*m.VersionThen)
		}
		if m.VersionNow != nil {
			now = "version " + strconv.Itoa(*m.VersionNow)
		}
		fmt.Fprintf(w, "  %s %s  (%s → %s)\n", p.yellow("!"), p.bold(m.Kind+"/"+*m.Key), then, now)
		for _, l := range diffLines(m.Diff) {
			fmt.Fprintln(w, "      "+colourDiffLine(p, l))
		}
	}
	fmt.Fprintln(w, "\nThe changes below are planned against the configuration as it is now.")
	fmt.Fprintln(w)
}

// renderRevisionDiff writes each resource of a revision beside today's:
// the diff from the spec now to the recorded one, which is what a restore
// would write.
func renderRevisionDiff(w io.Writer, p palette, d *revisionDiff) {
	fmt.Fprintf(w, "%s %s beside the configuration now\n", p.bold("Revision"), p.bold(d.RevisionID))
	fmt.Fprintln(w, "What a restore would write (now → recorded):")
	fmt.Fprintln(w)
	if len(d.Resources) == 0 {
		fmt.Fprintln(w, "  (no resources)")
	}
	for _, r := range d.Resources {
		recorded, now := "did not exist before the apply", "gone now"
		if r.VersionBefore != nil {
			recorded = "version " + strconv.Itoa(*r.VersionBefore) + " before the apply"
		}
		if r.VersionNow != nil {
			now = "version " + strconv.Itoa(*r.VersionNow) + " now"
		}
		state := recorded + ", " + now
		if len(r.Diff) == 0 {
			state += ": as recorded"
		}
		fmt.Fprintf(w, "  %s  (%s)\n", p.bold(r.Kind+"/"+r.Key), state)
		for _, l := range diffLines(r.Diff) {
			fmt.Fprintln(w, "      "+colourDiffLine(p, l))
		}
	}
	fmt.Fprintf(w, "\nTo plan these changes: keenauth revisions restore %s\n", d.RevisionID)
}

// renderApplied writes the outcome of an apply.
func renderApplied(w io.Writer, p palette, pl *plan, spHost string, replayed bool) {
	if replayed {
		fmt.Fprintf(w, "Plan %s was already applied with this Idempotency-Key; this is the stored answer.\n", pl.ID)
	}
	fmt.Fprintf(w, "%s plan %s at %s: %s.\n", p.green("Applied"), pl.ID, deref(pl.AppliedAt), appliedCounts(pl.Summary))
	if pl.RevisionID != nil {
		fmt.Fprintf(w, "Revision %s keeps the configuration as it was before; undo with: keenauth revisions restore %s\n", *pl.RevisionID, *pl.RevisionID)
	} else {
		fmt.Fprintln(w, "Nothing changed, so no revision was written.")
	}
	var conns []change
	for _, c := range pl.Changes {
		if c.Kind == "connection" && c.ResourceID != nil && (c.Action == "create" || c.Action == "update") {
			conns = append(conns, c)
		}
	}
	if len(conns) == 0 {
		return
	}
	fmt.Fprintln(w, "Connections:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range conns {
		line := "  " + c.ref() + "\t" + *c.ResourceID
		if spHost != "" && specType(c.Spec) == "enterprise" {
			// The URL to register at the identity provider.
			line += "\tcallback https://" + spHost + "/sso/" + *c.ResourceID + "/callback"
		}
		fmt.Fprintln(tw, line)
	}
	_ = tw.Flush()
}

func appliedCounts(s summary) string {
	return counts{Created: s.Create, Updated: s.Update, Deleted: s.Delete, Unchanged: s.NoOp}.String()
}

func specType(spec json.RawMessage) string {
	var s struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(spec, &s)
	return s.Type
}

func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

// renderRevision writes a revision: what each resource was before the
// apply that made it.
func renderRevision(w io.Writer, p palette, r *revision) {
	fmt.Fprintf(w, "%s %s of plan %s (%s, kept until %s)\n", p.bold("Revision"), p.bold(r.ID), r.PlanID, r.CreatedAt, r.ExpiresAt)
	fmt.Fprintf(w, "Types: %s\n", strings.Join(r.Types, ", "))
	fmt.Fprintf(w, "The apply: %s.\n\nBefore the apply:\n", r.Counts)
	if len(r.Resources) == 0 {
		fmt.Fprintln(w, "  (no resources)")
	}
	for _, res := range r.Resources {
		ref := p.bold(res.Kind + "/" + res.Key)
		if res.Action == "create" || res.VersionBefore == nil {
			fmt.Fprintf(w, "  %s  did not exist (the apply created it)\n", ref)
			continue
		}
		verb := "updated"
		if res.Action == "delete" {
			verb = "deleted"
		}
		fmt.Fprintf(w, "  %s  version %d (the apply %s it)\n", ref, *res.VersionBefore, verb)
		for _, l := range leaves(nil, res.SpecBefore) {
			fmt.Fprintln(w, "      "+l)
		}
	}
	fmt.Fprintf(w, "\nTo bring these resources back: keenauth revisions restore %s\n", r.ID)
}

// table writes rows aligned in columns.
func table(w io.Writer, header []string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	_ = tw.Flush()
}

// logDetails summarises a management-log entry's data.
func logDetails(e logEntry) string {
	var parts []string
	if e.PlanID != nil {
		parts = append(parts, "plan "+*e.PlanID)
	}
	if e.RevisionID != nil {
		parts = append(parts, "revision "+*e.RevisionID)
	}
	var c counts
	var res struct {
		Kind    string `json:"kind"`
		Key     string `json:"key"`
		Version *int   `json:"version"`
	}
	switch {
	case e.Type == "config.applied" && json.Unmarshal(e.Data, &c) == nil:
		parts = append(parts, c.short())
	case json.Unmarshal(e.Data, &res) == nil && res.Kind != "":
		s := res.Kind + "/" + res.Key
		if res.Version != nil {
			s += " version " + strconv.Itoa(*res.Version)
		}
		parts = append([]string{s}, parts...)
	default:
		if d := compact(e.Data); d != "{}" && d != "null" {
			parts = append(parts, d)
		}
	}
	return strings.Join(parts, "  ")
}

// renderProblemDetails writes the parts of a problem after its sentence:
// every pointer with its code, the members beside code, a hint of what to
// do, and the request id to quote to support.
func renderProblemDetails(b *strings.Builder, e *apiError) {
	p := e.problem
	for _, fe := range p.Errors {
		if e.flagOf != nil {
			if line, ok := e.flagOf(fe); ok {
				b.WriteString("  " + line + "\n")
				continue
			}
		}
		ptr := fe.Pointer
		if ptr == "" {
			ptr = "(request)"
		}
		fmt.Fprintf(b, "  %s: %s", ptr, fe.Code)
		if fe.Detail != "" {
			fmt.Fprintf(b, " (%s)", fe.Detail)
		}
		b.WriteByte('\n')
	}
	if len(p.RequiredPermissions) > 0 {
		fmt.Fprintf(b, "  required permissions: %s\n", strings.Join(p.RequiredPermissions, ", "))
	}
	if p.PlanStatus != "" {
		fmt.Fprintf(b, "  plan status: %s\n", p.PlanStatus)
	}
	if len(p.UnconfirmedDeletions) > 0 {
		fmt.Fprintf(b, "  unconfirmed deletions: %s\n", strings.Join(p.UnconfirmedDeletions, ", "))
	}
	if e.attempts > 1 {
		fmt.Fprintf(b, "  gave up after %d attempts in %s; --retry-for sets how long to keep trying\n", e.attempts, e.waited.Round(time.Second))
	}
	code := p.Code
	if code == "" {
		code = "no code"
	}
	fmt.Fprintf(b, "  (HTTP %d %s", e.status, code)
	if p.RequestID != "" {
		fmt.Fprintf(b, ", request %s", p.RequestID)
	}
	b.WriteString(")\n")
	if h := hint(p, e.planID); h != "" {
		b.WriteString(h + "\n")
	}
}

// hint says what to do next about a problem, when the CLI knows; planID
// is the plan the request acted on ("" when none).
func hint(p problem, planID string) string {
	rebase := "Make a new plan: keenauth config plan -f FILE"
	if planID != "" {
		rebase = "Plan the same changes against the configuration as it is now: keenauth config rebase " + planID +
			" (then review and apply the new plan)"
	}
	switch p.Code {
	case "unauthenticated":
		return "Check the API key in KEENAUTH_SECRET_KEY (or --secret-key)."
	case "deletion_not_confirmed":
		var flags []string
		for _, d := range p.UnconfirmedDeletions {
			flags = append(flags, "--confirm-deletion "+d)
		}
		return "Confirm the deletions to apply: " + strings.Join(flags, " ")
	case "config_conflict":
		for _, fe := range p.Errors {
			if strings.HasPrefix(fe.Pointer, "/versions/") {
				return "Export again (keenauth config export -o FILE), redo the edit and plan that; " +
					"to plan over those changes instead, remove the document's \"versions\" member."
			}
		}
		return rebase
	case "config_plan_expired":
		return rebase
	case "approval_required":
		plan := planID
		if plan == "" {
			plan = "PLAN"
		}
		return fmt.Sprintf("The plan needs %d more approval(s) (%d of %d received), each from a person other than its creator, with a key that holds config:approve: keenauth config approve %s",
			p.ApprovalsRequired-p.ApprovalsReceived, p.ApprovalsReceived, p.ApprovalsRequired, plan)
	case "config_plan_not_applicable":
		switch p.PlanStatus {
		case "applying":
			return "The plan is being applied; see it with: keenauth config show PLAN"
		case "conflicted", "expired":
			return rebase
		}
		return "Make a new plan: keenauth config plan -f FILE"
	case "validation_failed":
		var hints []string
		seen := map[string]bool{}
		for _, fe := range p.Errors {
			var h string
			switch fe.Code {
			case "secret_missing":
				h = "Set each missing secret as an environment variable of that name and pass --secrets-from-env."
			case "sp_host_required":
				h = "Pass --sp-host with the environment's service-provider host."
			case "sp_host_unused":
				h = "This plan writes no OIDC material: leave out --sp-host."
			case "secret_unused":
				h = "The plan does not need this secret."
			}
			if h != "" && !seen[h] {
				seen[h] = true
				hints = append(hints, h)
			}
		}
		return strings.Join(hints, "\n")
	}
	return ""
}
