package cli

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// markdownLimit bounds a plan's markdown, in bytes: a GitHub comment takes
// 65,536 characters, and a byte count bounds the characters however a
// host counts them (code points or UTF-16 units), leaving room for a
// pipeline's own lines around it.
const markdownLimit = 60000

// renderMarkdown writes a plan for a pull-request comment: a first line
// with the four counts of the summary, then the warnings, the approvals
// needed and the secrets the apply needs (by name), then one collapsible
// <details> per changed resource with its diff in a fenced diff block, and
// the unchanged resources as one count line. Past limit bytes the largest
// changes are left out, with a line saying how many and the command that
// shows them all. The output depends on the plan only: the same plan
// gives the same bytes. It holds no secret, since a plan holds none: the
// secrets the apply needs are named, never valued.
func renderMarkdown(pl *plan, limit int) string {
	m := markdownPlan{pl: pl}
	m.build()
	return m.fit(limit)
}

type markdownPlan struct {
	pl *plan
	// head and tail are the blocks before and after the lists and the
	// changes.
	head, warnings, secrets, tail []string
	approvals                     string   // "" when the plan asks for none
	changes                       []string // one block per changed resource, plan order
	unchanged                     int
}

func (m *markdownPlan) build() {
	pl := m.pl
	if pl.Status == "preview" {
		m.head = append(m.head, "### Keenauth plan preview: "+pl.Summary.String())
	} else {
		m.head = append(m.head, "### Keenauth plan `"+pl.ID+"`: "+pl.Summary.String())
	}
	m.head = append(m.head, m.statusLine())
	if pl.RebasedFrom != nil {
		m.head = append(m.head, fmt.Sprintf("Rebased from `%s`: %d moved since it was planned (`moved` in `--format json` lists them).", *pl.RebasedFrom, len(pl.Moved)))
	}
	for _, w := range pl.Warnings {
		m.warnings = append(m.warnings, fmt.Sprintf("- `%s`: %s (`%s`)", codeText(w.Target), mdText(strings.TrimSuffix(w.Detail, ".")), codeText(w.Code)))
	}
	if pl.ApprovalsRequired != nil && *pl.ApprovalsRequired > 0 {
		line := fmt.Sprintf("**Approvals needed:** %d; received %d", *pl.ApprovalsRequired, pl.approvalsReceived())
		var who []string
		for _, ap := range pl.Approvals {
			by := ap.APIKeyID
			if ap.Owner != nil {
				by = *ap.Owner
			}
			who = append(who, mdText(by)+" at "+ap.ApprovedAt)
		}
		if len(who) > 0 {
			line += " (" + strings.Join(who, ", ") + ")"
		}
		m.approvals = line + "."
	}
	for _, s := range pl.RequiredSecrets {
		m.secrets = append(m.secrets, "- `"+codeText(s)+"`")
	}
	for _, c := range pl.Changes {
		if c.Action == "no_op" {
			m.unchanged++
			continue
		}
		m.changes = append(m.changes, changeBlock(c))
	}
	if m.unchanged > 0 {
		m.tail = append(m.tail, fmt.Sprintf("= %d unchanged (`no_op`), not listed.", m.unchanged))
	}
	if pl.RequiresSPHost && (pl.Status == "planned" || pl.Status == "preview") {
		m.tail = append(m.tail, "The apply writes OIDC material: it needs `--sp-host`, the service-provider host of the callback URL.")
	}
	if pl.Status == "planned" && pl.hasChanges() {
		// A command that confirms thousands of deletions is no line
		// for a comment: config show prints it.
		if cmd := pl.applyCommand(); len(cmd) <= 2000 {
			m.tail = append(m.tail, "To apply: `"+cmd+"`")
		} else {
			m.tail = append(m.tail, "To apply: run the command that `keenauth config show "+pl.ID+"` prints.")
		}
	}
}

// statusLine says where the plan stands: environment, status, types.
func (m *markdownPlan) statusLine() string {
	pl := m.pl
	parts := []string{"Environment `" + codeText(pl.EnvironmentID) + "`"}
	switch pl.Status {
	case "preview":
		parts = append(parts, "preview: nothing was stored")
	case "planned":
		parts = append(parts, "planned, expires "+pl.ExpiresAt)
	case "applied":
		s := "applied " + deref(pl.AppliedAt)
		if pl.RevisionID != nil {
			s += ", revision `" + *pl.RevisionID + "`"
		}
		parts = append(parts, s)
	default:
		parts = append(parts, mdText(pl.Status))
	}
	types := make([]string, len(pl.Types))
	for i, t := range pl.Types {
		types[i] = "`" + codeText(t) + "`"
	}
	s := "types " + strings.Join(types, ", ")
	if pl.Prune {
		s += " (prune: resources the document leaves out are deleted)"
	}
	return strings.Join(append(parts, s), " · ") + "."
}

// changeBlock is one changed resource: its action and reference as the
// summary of a <details>, its diff lines in a fenced diff block. A replace
// reads "! path: old → new", since a diff block marks ! lines as changed.
func changeBlock(c change) string {
	var notes []string
	if c.BaseVersion != nil {
		notes = append(notes, "version "+strconv.Itoa(*c.BaseVersion))
	}
	if c.RequiresSecret && c.SecretRef != "" {
		notes = append(notes, "needs `"+codeText(c.SecretRef)+"`")
	}
	summary := "<code>" + map[string]string{"create": "+ create", "update": "~ update", "delete": "- delete"}[c.Action] +
		"</code> <b>" + htmlText(c.ref()) + "</b>"
	if c.Action != "create" && c.Action != "update" && c.Action != "delete" {
		summary = "<code>" + htmlText(c.Action) + "</code> <b>" + htmlText(c.ref()) + "</b>"
	}
	if len(notes) > 0 {
		summary += " (" + strings.Join(notes, ", ") + ")"
	}
	lines := diffLines(c.Diff)
	for i, l := range lines {
		if strings.HasPrefix(l, "~ ") {
			lines[i] = "!" + l[1:]
		}
	}
	fence := strings.Repeat("`", max(3, longestRun(lines, '`')+1))
	var b strings.Builder
	b.WriteString("<details><summary>" + summary + "</summary>\n\n")
	b.WriteString(fence + "diff\n")
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	b.WriteString(fence + "\n\n</details>")
	return b.String()
}

// fit joins the parts, leaving out the largest changes (then, if the rest
// is still too long, the last secrets and warnings) until it takes at most
// limit bytes. Only the line that counts the left-out changes depends on
// how many there are, so the length is counted, not written, for each.
func (m *markdownPlan) fit(limit int) string {
	keep := make([]bool, len(m.changes))
	total := 0
	for i, c := range m.changes {
		keep[i] = true
		total += len(c) + len(blockSep)
	}
	w, s := len(m.warnings), len(m.secrets)
	base := len(m.join(nil, 0, w, s)) // without the changes and the left-out line
	if base+total <= limit {
		return m.join(keep, 0, w, s)
	}
	// Largest first; among equals, the later in the plan.
	order := make([]int, len(m.changes))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		if la, lb := len(m.changes[order[a]]), len(m.changes[order[b]]); la != lb {
			return la > lb
		}
		return order[a] > order[b]
	})
	left := 0
	over := func() bool { return base+total+len(m.leftOutLine(left))+len(blockSep) > limit }
	for left < len(order) && over() {
		keep[order[left]] = false
		total -= len(m.changes[order[left]]) + len(blockSep)
		left++
	}
	if !over() {
		return m.join(keep, left, w, s)
	}
	// Every change is out and the rest is still too long: keep as many
	// secrets, then warnings, as fit (the length grows with the count).
	fits := func(w, s int) bool { return len(m.join(keep, left, w, s)) <= limit }
	s = sort.Search(len(m.secrets)+1, func(n int) bool { return !fits(w, n) }) - 1
	if s < 0 {
		s = 0
		w = sort.Search(len(m.warnings)+1, func(n int) bool { return !fits(n, 0) }) - 1
		if w < 0 {
			return strings.ToValidUTF8(m.join(keep, left, 0, 0)[:limit], "")
		}
	}
	return m.join(keep, left, w, s)
}

// blockSep separates two blocks (paragraphs, lists, <details>).
const blockSep = "\n\n"

// leftOutLine says how many changes were left out, and how to see them.
func (m *markdownPlan) leftOutLine(left int) string {
	if left == 0 {
		return ""
	}
	return fmt.Sprintf("**%d of %d changes left out** (the largest), to keep this comment under %s characters: see every change with `%s`.",
		left, len(m.changes), thousands(markdownLimit), m.showCommand())
}

// join writes the comment with the kept changes (keep nil: none) and the
// first w warnings and s secrets: blocks separated by a blank line.
func (m *markdownPlan) join(keep []bool, left, w, s int) string {
	blocks := append([]string(nil), m.head...)
	list := func(title string, items []string, n int) {
		if len(items) == 0 {
			return
		}
		l := title + "\n\n" + strings.Join(items[:n], "\n")
		if n < len(items) {
			if n > 0 {
				l += "\n"
			}
			l += fmt.Sprintf("- … and %d more (see them all with `%s`)", len(items)-n, m.showCommand())
		}
		blocks = append(blocks, l)
	}
	list(fmt.Sprintf("**Warnings** (%d):", len(m.warnings)), m.warnings, w)
	if m.approvals != "" {
		blocks = append(blocks, m.approvals)
	}
	list("**Secrets the apply needs** (by name; `--secrets-from-env` reads each from the environment variable of that name):",
		m.secrets, s)
	if len(m.changes) == 0 && m.unchanged == 0 {
		blocks = append(blocks, "No changes.")
	}
	for i, c := range m.changes {
		if keep != nil && keep[i] {
			blocks = append(blocks, c)
		}
	}
	if left > 0 {
		blocks = append(blocks, m.leftOutLine(left))
	}
	blocks = append(blocks, m.tail...)
	return strings.Join(blocks, blockSep) + "\n"
}

// showCommand shows the whole plan; a preview was not stored.
func (m *markdownPlan) showCommand() string {
	if m.pl.Status == "preview" || m.pl.ID == "" {
		return "keenauth config plan … --preview --format text"
	}
	return "keenauth config show " + m.pl.ID
}

func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// longestRun is the longest run of c in lines.
func longestRun(lines []string, c byte) int {
	best := 0
	for _, l := range lines {
		run := 0
		for i := 0; i < len(l); i++ {
			if l[i] == c {
				run++
				best = max(best, run)
			} else {
				run = 0
			}
		}
	}
	return best
}

// mdText is text from the API written as markdown text: on one line, and
// no character that markdown or HTML would read as markup.
func mdText(s string) string {
	var b strings.Builder
	for _, r := range strings.Join(strings.Fields(s), " ") {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '\\', '`', '*', '_', '[', ']', '|', '#', '~':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// codeText is text for a code span: no backtick, one line.
func codeText(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "`", "'")
}

// htmlText is text inside an HTML element.
func htmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
