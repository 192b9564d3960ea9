package cli

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// listFlags are the pagination flags of every list.
type listFlags struct {
	limit  int
	cursor string
}

func (l *listFlags) add(c *cobra.Command) {
	c.Flags().IntVar(&l.limit, "limit", 0, "at most this many entries, 1 to 100 (default: the API's, 20)")
	c.Flags().StringVar(&l.cursor, "cursor", "", "continue after this entry (the next_cursor of the previous page)")
}

func (l *listFlags) query(cmd *cobra.Command) (url.Values, error) {
	q := url.Values{}
	if cmd.Flags().Changed("limit") {
		if l.limit < 1 || l.limit > 100 {
			return nil, cmdLinef("--limit must be from 1 to 100")
		}
		q.Set("limit", strconv.Itoa(l.limit))
	}
	if l.cursor != "" {
		q.Set("cursor", l.cursor)
	}
	return q, nil
}

// more tells how to read the next page.
func more(a *app, cmd *cobra.Command, next *string) {
	if next == nil {
		return
	}
	var flags []string
	// Only the list's own filters: never a global flag (--secret-key).
	for _, name := range []string{"status", "type", "limit"} {
		if f := cmd.LocalNonPersistentFlags().Lookup(name); f != nil && f.Changed {
			flags = append(flags, "--"+name+" "+f.Value.String())
		}
	}
	line := cmd.CommandPath()
	if len(flags) > 0 {
		line += " " + strings.Join(flags, " ")
	}
	fmt.Fprintf(a.stdout, "\nMore: %s --cursor %s\n", line, *next)
}

func (a *app) plansCommand() *cobra.Command {
	c := group(&cobra.Command{
		Use:     "plans",
		Short:   "List config plans",
		Example: "  keenauth plans list --status planned",
	})
	var status string
	var lf listFlags
	list := &cobra.Command{
		Use:   "list",
		Short: "List the environment's plans, newest first",
		Example: `  keenauth plans list
  keenauth plans list --status planned --limit 5
  keenauth plans list --status applied --json | jq -r '.data[].id'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return listTable(a, cmd, &lf, "/v1/config-plans", map[string]string{"status": status}, "No plans.",
				[]string{"ID", "STATUS", "CHANGES", "CREATED", "TYPES"}, func(p plan) []string {
					return []string{p.ID, p.Status, p.Summary.short(), p.CreatedAt, typesColumn(p.Types)}
				})
		},
	}
	list.Flags().StringVar(&status, "status", "", "only plans of this status: planned, applying, applied, conflicted, expired, rejected")
	lf.add(list)
	_ = list.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(
		[]string{"planned", "applying", "applied", "conflicted", "expired", "rejected"}, cobra.ShellCompDirectiveNoFileComp))
	c.AddCommand(list)
	return c
}

// list reads one page into v; with --json it prints the answer and
// reports done.
// listTable runs a list command: the page of path with the list flags and
// the non-empty filters, printed as a table of header (empty: the empty
// message) and the command to get the next page; --json prints the answer.
func listTable[T any](a *app, cmd *cobra.Command, lf *listFlags, path string, filters map[string]string, empty string,
	header []string, row func(T) []string) error {
	q, err := lf.query(cmd)
	if err != nil {
		return err
	}
	for k, v := range filters {
		if v != "" {
			q.Set(k, v)
		}
	}
	var pg page[T]
	if done, err := a.list(cmd, path, q, &pg); done || err != nil {
		return err
	}
	if len(pg.Data) == 0 {
		fmt.Fprintln(a.stdout, empty)
		return nil
	}
	rows := make([][]string, len(pg.Data))
	for i, item := range pg.Data {
		rows[i] = row(item)
	}
	table(a.stdout, header, rows)
	more(a, cmd, pg.NextCursor)
	return nil
}

func (a *app) list(cmd *cobra.Command, path string, q url.Values, v any) (bool, error) {
	cl, err := a.api()
	if err != nil {
		return true, err
	}
	resp, err := cl.do(a.ctx, request{method: http.MethodGet, path: path, query: q})
	if err != nil {
		return true, err
	}
	if a.json {
		writeRaw(a.stdout, resp.body)
		return true, nil
	}
	return false, decode(resp, v)
}

func (a *app) revisionsCommand() *cobra.Command {
	c := group(&cobra.Command{
		Use:   "revisions",
		Short: "List, show and restore revisions (the configuration before each apply)",
		Example: `  keenauth revisions list
  keenauth revisions show cfgr_…
  keenauth revisions diff cfgr_…
  keenauth revisions restore cfgr_…`,
	})
	var lf listFlags
	list := &cobra.Command{
		Use:   "list",
		Short: "List the revisions, newest first",
		Long:  "Lists the revisions kept: the 50 most recent of the environment, none older than 90 days.",
		Example: `  keenauth revisions list
  keenauth revisions list --limit 1 --json | jq -r '.data[0].id'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return listTable(a, cmd, &lf, "/v1/config-revisions", nil, "No revisions.",
				[]string{"ID", "PLAN", "CHANGES", "CREATED", "TYPES"}, func(r revision) []string {
					return []string{r.ID, r.PlanID, r.Counts.short(), r.CreatedAt, typesColumn(r.Types)}
				})
		},
	}
	lf.add(list)
	show := &cobra.Command{
		Use:   "show REVISION",
		Short: "Show a revision: each resource as it was before the apply",
		Example: `  keenauth revisions show cfgr_01m4qpqtywfs7930tb6kqn5rc5
  keenauth revisions show cfgr_01m4qpqtywfs7930tb6kqn5rc5 --json | jq .resources`,
		Args:              exactArgs("REVISION"),
		ValidArgsFunction: a.completeRevisions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return showAnswer(a, "/v1/config-revisions/"+url.PathEscape(args[0]), renderRevision)
		},
	}
	diff := &cobra.Command{
		Use:   "diff REVISION",
		Short: "Compare a revision with the configuration now: what a restore would write",
		Long: `Prints each resource of the revision with its recorded version beside
today's, and the changes from today's spec to the recorded one (old → new),
which is what revisions restore would plan. Nothing is written.`,
		Example: `  keenauth revisions diff cfgr_01m4qpqtywfs7930tb6kqn5rc5
  keenauth revisions diff cfgr_01m4qpqtywfs7930tb6kqn5rc5 --json | jq '.resources[] | select(.diff != [])'`,
		Args:              exactArgs("REVISION"),
		ValidArgsFunction: a.completeRevisions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return showAnswer(a, "/v1/config-revisions/"+url.PathEscape(args[0])+"/diff", renderRevisionDiff)
		},
	}
	var restoreView planView
	restore := &cobra.Command{
		Use:   "restore REVISION",
		Short: "Plan the rollback of a revision (review it, then apply it)",
		Long: `Creates a new plan whose changes bring every resource of the revision back
to the state it recorded. Nothing changes until that plan is applied.`,
		Example: `  keenauth revisions restore cfgr_01m4qpqtywfs7930tb6kqn5rc5
  plan=$(keenauth revisions restore cfgr_… --json | jq -r .id) && keenauth config apply "$plan"`,
		Args:              exactArgs("REVISION"),
		ValidArgsFunction: a.completeRevisions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.requestPlan(request{method: http.MethodPost, path: "/v1/config-revisions/" + url.PathEscape(args[0]) + ":restore",
				body: []byte("{}"), idempotencyKey: newIdempotencyKey()}, restoreView)
		},
	}
	restoreView.add(a, restore, false)
	c.AddCommand(list, show, diff, restore)
	return c
}

// showAnswer GETs path and prints the answer with render, or as it came with
// --json.
func showAnswer[T any](a *app, path string, render func(io.Writer, palette, *T)) error {
	cl, err := a.api()
	if err != nil {
		return err
	}
	resp, err := cl.do(a.ctx, request{method: http.MethodGet, path: path})
	if err != nil {
		return err
	}
	if a.json {
		writeRaw(a.stdout, resp.body)
		return nil
	}
	var v T
	if err := decode(resp, &v); err != nil {
		return err
	}
	render(a.stdout, newPalette(a.stdout, a.env), &v)
	return nil
}

func (a *app) completeRevisions(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var pg page[revision]
	if err := a.completionGet("/v1/config-revisions", url.Values{"limit": {"50"}}, &pg); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, r := range pg.Data {
		if strings.HasPrefix(r.ID, toComplete) {
			out = append(out, cobra.CompletionWithDesc(r.ID, r.Counts.short()+" "+r.CreatedAt))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}

func (a *app) logsCommand() *cobra.Command {
	var typ string
	var lf listFlags
	c := &cobra.Command{
		Use:   "logs",
		Short: "List the management log, newest first",
		Long: `Lists the management log: one config.applied entry per apply, with its
counts, and one <kind>.created|updated|deleted entry per changed resource.`,
		Example: `  keenauth logs
  keenauth logs --type config.applied --limit 5
  keenauth logs --type connection.deleted --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("type") && !slices.Contains(logTypes(), typ) {
				return cmdLinef("unknown --type %q: the management log's types are config.applied and <kind>.created, "+
					"<kind>.updated or <kind>.deleted, where <kind> is one of %s", typ, strings.Join(kindNames, ", "))
			}
			return listTable(a, cmd, &lf, "/v1/management-logs", map[string]string{"type": typ}, "No entries.",
				[]string{"ID", "CREATED", "TYPE", "DETAILS"}, func(e logEntry) []string {
					return []string{e.ID, e.CreatedAt, e.Type, logDetails(e)}
				})
		},
	}
	c.Flags().StringVar(&typ, "type", "", "only entries of this type: config.applied, or <kind>.created|updated|deleted (e.g. connection.deleted)")
	lf.add(c)
	_ = c.RegisterFlagCompletionFunc("type", cobra.FixedCompletions(logTypes(), cobra.ShellCompDirectiveNoFileComp))
	return c
}

// logTypes are the types of the management log's entries (SPEC §7): one
// config.applied per apply, and <kind>.created|updated|deleted per
// changed resource. The list is the CLI's, so that a misspelt --type is
// an error rather than an empty page.
func logTypes() []string {
	out := []string{"config.applied"}
	for _, k := range kindNames {
		for _, what := range []string{"created", "updated", "deleted"} {
			out = append(out, k+"."+what)
		}
	}
	return out
}

// typesColumn writes a plan's or revision's types compactly for a list:
// "all" for every kind, the kind itself for one, else how many of all
// (the nine names of a whole export made the column ~190 characters
// wide). show prints them in full.
func typesColumn(types []string) string {
	switch {
	case len(types) >= len(kindNames) && !slices.ContainsFunc(kindNames, func(k string) bool { return !slices.Contains(types, k) }):
		return "all"
	case len(types) == 1:
		return types[0]
	}
	return fmt.Sprintf("%d of %d", len(types), len(kindNames))
}
