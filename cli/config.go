package cli

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

func (a *app) configCommand() *cobra.Command {
	c := group(&cobra.Command{
		Use:   "config",
		Short: "Export, plan and apply the configuration",
		Example: `  keenauth config export -o keenauth.json
  keenauth config plan -f keenauth.json
  keenauth config show cfgp_…
  keenauth config rebase cfgp_…
  keenauth config approve cfgp_… --comment "Checked with Ana"
  keenauth config apply cfgp_… --secrets-from-env --sp-host login.shop.example`,
	})
	c.AddCommand(a.exportCommand(), a.planCommand(), a.showCommand(), a.rebaseCommand(), a.applyCommand(), a.promoteCommand(),
		a.approveCommand(), a.rejectCommand())
	return c
}

var kindNames = []string{"api", "connection", "role", "application", "application_branding",
	"environment_settings", "identity_settings", "attack_protection", "branding"}

func (a *app) exportCommand() *cobra.Command {
	var types []string
	var out string
	var vf varFlags
	c := &cobra.Command{
		Use:   "export",
		Short: "Write the current configuration as a document",
		Long: `Writes the environment's current configuration as {"config": …, "versions": …},
a document that config plan accepts as it is. The versions of every exported
resource go with it: config plan sends them, and the API refuses the plan if
any of those resources changed since the export (edit the config member, not
the versions). A literal ${ in a value is written $${, which config plan
reads back as ${ (a document's ${NAME} is a placeholder). With --json the
API's answer is written unchanged.

--vars FILE (and --var NAME=VALUE) turn the environment's values back into
placeholders: each string value equal to a string variable's value is
written "${NAME}" (whole values only), and a literal ${ in any other value is
written $${. A value equal to two variables' values is refused, naming both.
The document is then a template for any environment: it is written as
{"config": …} without the versions, which hold for this environment only,
and config plan -f with another environment's --vars fills it in.`,
		Example: `  keenauth config export
  keenauth config export --types connection,api -o keenauth.json
  keenauth config export --vars production.yaml -o keenauth.json
  keenauth config export --json | jq .versions`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			templated := len(vf.files) > 0 || len(vf.assignments) > 0
			if templated && a.json {
				return cmdLinef("--json writes the API's answer unchanged and --vars rewrites it: use one")
			}
			vars, err := vf.read()
			if err != nil {
				return err
			}
			q := url.Values{}
			if cmd.Flags().Changed("types") {
				q.Set("types", strings.Join(types, ","))
			}
			cl, err := a.api()
			if err != nil {
				return err
			}
			resp, err := cl.do(a.ctx, request{method: http.MethodGet, path: "/v1/config", query: q})
			if err != nil {
				return err
			}
			body := resp.body
			if !a.json {
				var ex struct {
					Config   json.RawMessage `json:"config"`
					Versions json.RawMessage `json:"versions"`
				}
				if err := decode(resp, &ex); err != nil {
					return err
				}
				if templated {
					cfg, err := a.template(ex.Config, vars, "the export")
					if err != nil {
						return err
					}
					ex.Config, ex.Versions = cfg, nil
				} else {
					// A literal ${ is written $${, so that config plan
					// reads the value back as it is, not as a placeholder.
					cfg, _, _, err := placeholdersFor(ex.Config, nil)
					if err != nil {
						return err
					}
					ex.Config = cfg
				}
				// The versions go with the document, so that planning it
				// after an edit is refused if anything moved since.
				doc := append(append([]byte(`{"config":`), ex.Config...), '}')
				if len(ex.Versions) > 0 {
					doc = append(append(append(doc[:len(doc)-1], `,"versions":`...), ex.Versions...), '}')
				}
				var buf bytes.Buffer
				if err := json.Indent(&buf, doc, "", "  "); err != nil {
					return fmt.Errorf("the export is not valid JSON: %w", err)
				}
				body = buf.Bytes()
			}
			if out == "" || out == "-" {
				writeRaw(a.stdout, body)
				return nil
			}
			if err := writeFileAtomic(out, append(bytes.TrimRight(body, "\n"), '\n')); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "Wrote the configuration to %s\n", out)
			return nil
		},
	}
	c.Flags().StringSliceVar(&types, "types", nil, "export only these resource types (comma separated: "+strings.Join(kindNames, ",")+")")
	c.Flags().StringVarP(&out, "output", "o", "", "write to this file instead of standard output")
	vf.add(c)
	_ = c.RegisterFlagCompletionFunc("types", cobra.FixedCompletions(kindNames, cobra.ShellCompDirectiveNoFileComp))
	return c
}

// writeFileAtomic replaces path with data, never leaving half a file.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return nil
}

func (a *app) planCommand() *cobra.Command {
	var file string
	var prune, preview bool
	var view planView
	var vf varFlags
	c := &cobra.Command{
		Use:   "plan -f FILE",
		Short: "Plan the changes a document makes",
		Long: `Sends the document of FILE (- for standard input) and prints the plan the
API stores: every change with its diff, the summary, the warnings, the
secrets the apply will need, and the command that applies it. FILE holds the
document itself, or {"config": …} as config export writes it, in JSON or
YAML (a .yaml or .yml file, or content that does not start as JSON does,
with { or [), which is sent as the same JSON: the API's error pointers are
the same either way. The "versions" of an export are sent too: if a resource
they list changed since the export, the plan is refused (exit 3) and nothing
is stored; export again and redo the edit.

With --prune, every existing resource of a planned type that the document
leaves out is deleted. Unchanged resources are counted on one line unless
--show-unchanged lists them.

--preview shows the plan the API would store, with every check of plan
creation, and stores nothing: no plan id, nothing to apply.

--detailed-exitcode exits 0 when the plan changes nothing, 2 when it has
changes and 1 on any failure, as terraform plan -detailed-exitcode does
(with --preview too).

--vars FILE (JSON or YAML, repeatable: a later file wins) and --var
NAME=VALUE fill in the document's ${NAME} placeholders before anything is
sent; a value that is exactly "${NAME}" takes the variable's value whatever
its type, and $${ writes a literal ${. A placeholder without a value fails
the command, naming each by its pointer in the document; nothing is sent.

--format markdown writes the plan as a pull-request comment: the counts,
warnings and secrets (by name), one collapsible diff per changed resource,
at most 60,000 characters (the largest changes left out past that, with the
command that shows them). --format json is --json.`,
		Example: `  keenauth config plan -f keenauth.json
  keenauth config plan -f keenauth.json --preview --detailed-exitcode
  keenauth config plan -f keenauth.yaml --show-unchanged
  keenauth config plan -f keenauth.yaml --vars production.yaml --var API_HOST=api.shop.example
  keenauth config plan -f keenauth.yaml --vars production.yaml --format markdown > plan.md
  keenauth config export | keenauth config plan -f -
  keenauth config plan -f keenauth.json --prune --json | jq -r .id
  keenauth config plan -f keenauth.json --detailed-exitcode; [ $? -eq 2 ] && echo "changes to review"`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return cmdLinef("-f FILE is required (- reads standard input)")
			}
			vars, err := vf.read()
			if err != nil {
				return err
			}
			doc, err := readDocument(file, a.stdin)
			if err != nil {
				return err
			}
			if doc, err = resolve(a.stderr, documentName(file), doc, vars); err != nil {
				return err
			}
			return a.createPlan(doc, prune, preview, view, file)
		},
	}
	c.Flags().StringVarP(&file, "file", "f", "", "the document, JSON or YAML (- for standard input)")
	c.Flags().BoolVar(&prune, "prune", false, "delete the resources of the planned types that the document leaves out")
	c.Flags().BoolVar(&preview, "preview", false, "show the plan without storing it (no plan id, nothing to apply)")
	vf.add(c)
	view.add(a, c, true)
	view.addFormat(a, c)
	_ = c.MarkFlagFilename("file", "json", "yaml", "yml")
	return c
}

// createPlan sends a plan creation (a preview with preview) of doc, and
// prints the plan. file names the document in a refusal of its versions
// (a promotion sends none).
func (a *app) createPlan(doc planDocument, prune, preview bool, view planView, file string) error {
	cl, err := a.api()
	if err != nil {
		return err
	}
	body, _ := json.Marshal(struct {
		Config   json.RawMessage `json:"config"`
		Prune    bool            `json:"prune"`
		Versions json.RawMessage `json:"versions,omitempty"`
	}{doc.config, prune, doc.versions})
	// A generated key makes the creation safe to retry: a retry after a
	// lost answer gets the same plan, not a second one. A preview, which
	// stores nothing, is safe to retry anyway; the API ignores its key,
	// which lets the client retry it.
	req := request{method: http.MethodPost, path: "/v1/config-plans", body: body, idempotencyKey: newIdempotencyKey()}
	if preview {
		req.query = url.Values{"preview": {"true"}}
	}
	resp, err := cl.do(a.ctx, req)
	if err != nil && doc.versions != nil {
		return namingVersions(err, file)
	}
	if err != nil {
		return err
	}
	return a.printPlan(resp, view)
}

// planView is how a plan is printed: --show-unchanged, --format.
type planView struct {
	showUnchanged bool
	format        string
	// rebases: look up the rebases of the plan in its events, to say which
	// plan replaced it (config show).
	rebases bool
}

// addFormat adds --format text|json|markdown to c, checked before the
// command runs (nothing is sent with a wrong one). --json is --format json.
func (v *planView) addFormat(a *app, c *cobra.Command) {
	c.Flags().StringVar(&v.format, "format", "text", "text (for a terminal), json (the API's plan, as --json) or markdown (for a pull-request comment)")
	_ = c.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"text", "json", "markdown"}, cobra.ShellCompDirectiveNoFileComp))
	c.PreRunE = func(cmd *cobra.Command, _ []string) error {
		switch v.format {
		case "json":
			a.json = true
		case "text", "markdown":
			if a.json && cmd.Flags().Changed("format") {
				return cmdLinef("--json is --format json: give one of them")
			}
		default:
			return cmdLinef("--format %q: give text, json or markdown", v.format)
		}
		return nil
	}
}

// add adds --show-unchanged to c, and --detailed-exitcode when detailed.
// The latter is bound to the app, so that a failure after the flags are
// parsed (a missing argument) exits 1 too.
func (v *planView) add(a *app, c *cobra.Command, detailed bool) {
	c.Flags().BoolVar(&v.showUnchanged, "show-unchanged", false, "list every unchanged (no_op) resource instead of counting them")
	if detailed {
		c.Flags().BoolVar(&a.detailedExit, "detailed-exitcode", false, "exit 0 when nothing changes, 2 when the plan has changes, 1 on any failure")
	}
}

// printPlan writes a plan answer: unchanged with --json, else for review.
// With --detailed-exitcode the exit status says whether it changes
// anything.
// requestPlan sends a request whose answer is a plan, and prints it.
func (a *app) requestPlan(req request, view planView) error {
	cl, err := a.api()
	if err != nil {
		return err
	}
	resp, err := cl.do(a.ctx, req)
	if err != nil {
		return err
	}
	return a.printPlan(resp, view)
}

func (a *app) printPlan(resp *response, view planView) error {
	var pl plan
	if err := decode(resp, &pl); err != nil {
		return err
	}
	if a.detailedExit && pl.hasChanges() {
		a.exit = ExitChanges
	}
	switch {
	case a.json:
		writeRaw(a.stdout, resp.body)
	case view.format == "markdown":
		_, _ = io.WriteString(a.stdout, renderMarkdown(&pl, markdownLimit))
	default:
		if view.rebases {
			pl.rebasedAs = a.rebasesOf(pl.ID)
		}
		// A plan of thousands of changes is thousands of lines: written
		// through a buffer, they reach a pipe in a few large writes.
		w := bufio.NewWriterSize(a.stdout, 64<<10)
		renderPlan(w, newPalette(a.stdout, a.env), &pl, view.showUnchanged)
		_ = w.Flush() // as every write of the human output, unchecked
	}
	return nil
}

// rebasesOf lists the plans that rebased plan id (its plan_rebased
// events), oldest first. What cannot be read is left out: the plan is
// printed all the same.
func (a *app) rebasesOf(id string) []string {
	var events page[struct {
		Type string `json:"type"`
		Data struct {
			PlanID string `json:"plan_id"`
		} `json:"data"`
	}]
	if _, err := a.client.getJSON(a.ctx, "/v1/config-plans/"+url.PathEscape(id)+"/events", url.Values{"limit": {"100"}}, &events); err != nil {
		return nil
	}
	var out []string
	for _, e := range events.Data {
		if e.Type == "plan_rebased" && e.Data.PlanID != "" {
			out = append(out, e.Data.PlanID)
		}
	}
	return out
}

func (a *app) showCommand() *cobra.Command {
	var view planView
	c := &cobra.Command{
		Use:   "show PLAN",
		Short: "Show a plan: its changes, warnings, secrets and status",
		Long: `Prints a stored plan as config plan does, and what became of it.

--detailed-exitcode exits 0 when the plan changes nothing, 2 when it has
changes (whatever its status) and 1 on any failure.

--format markdown writes the plan as a pull-request comment: the counts,
warnings and secrets (by name), one collapsible diff per changed resource,
at most 60,000 characters (the largest changes left out past that, with the
command that shows them). --format json is --json.`,
		Example: `  keenauth config show cfgp_01m4qpqtywfs7930tb6kqn5rc5
  keenauth config show cfgp_01m4qpqtywfs7930tb6kqn5rc5 --show-unchanged
  keenauth config show cfgp_01m4qpqtywfs7930tb6kqn5rc5 --json | jq .status`,
		Args:              exactArgs("PLAN"),
		ValidArgsFunction: a.completePlans(""),
		RunE: func(cmd *cobra.Command, args []string) error {
			view.rebases = true
			return a.requestPlan(request{method: http.MethodGet, path: "/v1/config-plans/" + url.PathEscape(args[0])}, view)
		},
	}
	view.add(a, c, true)
	view.addFormat(a, c)
	return c
}

func (a *app) rebaseCommand() *cobra.Command {
	var view planView
	c := &cobra.Command{
		Use:   "rebase PLAN",
		Short: "Plan a plan's document again, against the configuration as it is now",
		Long: `Creates a new plan of the same desired state as PLAN (the same specs and
deletions, the same --prune), computed against the configuration as it is
now, and prints it as config plan does, after what moved since PLAN was
planned: each of its resources whose version changed, with the diff from the
spec PLAN was based on to the spec now, and each planned type that other
changes touched. PLAN may be planned, conflicted or expired, and keeps its
status. Review the new plan, then apply it.

--detailed-exitcode exits 0 when the new plan changes nothing, 2 when it has
changes and 1 on any failure.

--format markdown writes the plan as a pull-request comment: the counts,
warnings and secrets (by name), one collapsible diff per changed resource,
at most 60,000 characters (the largest changes left out past that, with the
command that shows them). --format json is --json.`,
		Example: `  keenauth config rebase cfgp_01m4qpqtywfs7930tb6kqn5rc5
  keenauth config rebase cfgp_01m4qpqtywfs7930tb6kqn5rc5 --json | jq .moved`,
		Args:              exactArgs("PLAN"),
		ValidArgsFunction: a.completePlans(""),
		RunE: func(cmd *cobra.Command, args []string) error {
			// A generated key makes the rebase safe to retry: a retry after
			// a lost answer gets the same plan, not a second one.
			return a.requestPlan(request{method: http.MethodPost, path: "/v1/config-plans/" + url.PathEscape(args[0]) + ":rebase",
				body: []byte("{}"), idempotencyKey: newIdempotencyKey()}, view)
		},
	}
	view.add(a, c, true)
	view.addFormat(a, c)
	return c
}

func (a *app) applyCommand() *cobra.Command {
	var (
		confirm        []string
		secretsFromEnv bool
		spHost         string
		key            string
		validateOnly   bool
	)
	c := &cobra.Command{
		Use:   "apply PLAN",
		Short: "Apply a plan, all or nothing",
		Long: `Applies a stored plan in one transaction. A plan is applied once.

--secrets-from-env reads each secret the plan needs (its required_secrets)
from the environment variable of the same name; a missing one is reported by
name before anything is sent, and a value is never printed. Only variables
named KEENAUTH_[A-Z0-9_]+ are read: a plan that asks for any other name is
refused (exit 1) before the apply is sent, and that variable is not read.

Every apply carries an Idempotency-Key: --idempotency-key, or one generated
and printed on standard error so the same apply can be retried by hand. A
429, a 503 or a network failure is retried with the same key, after the
Retry-After the API asks for, until --retry-for is spent.

--validate-only runs every check of the apply and writes nothing.

` + exitStatusHelp,
		Example: `  keenauth config apply cfgp_…
  keenauth config apply cfgp_… --confirm-deletion connection/legacy
  KEENAUTH_CONNECTION_ACME_SSO_CLIENT_SECRET=… keenauth config apply cfgp_… --secrets-from-env --sp-host login.shop.example
  keenauth config apply cfgp_… --validate-only
  keenauth config apply cfgp_… --idempotency-key deploy-4711 --json`,
		Args:              exactArgs("PLAN"),
		ValidArgsFunction: a.completePlans("planned"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			cl, err := a.api()
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("idempotency-key") && strings.TrimSpace(key) == "" {
				return cmdLinef("--idempotency-key must not be empty")
			}
			body := map[string]any{}
			if secretsFromEnv {
				secrets, err := a.secretsFromEnv(cl, id)
				if err != nil {
					return err
				}
				if len(secrets) > 0 {
					body["resolved_secrets"] = secrets
				}
			}
			if len(confirm) > 0 {
				body["confirm_deletions"] = confirm
			}
			if spHost != "" {
				body["sp_host"] = spHost
			}
			raw, err := json.Marshal(body)
			if err != nil {
				return fmt.Errorf("encode the apply request: %w", err)
			}
			if key == "" {
				key = newIdempotencyKey()
				fmt.Fprintf(a.stderr, "Idempotency-Key: %s (to retry this apply by hand: --idempotency-key %s)\n", key, key)
			}
			var q url.Values
			if validateOnly {
				q = url.Values{"validate_only": {"true"}}
			}
			resp, err := cl.do(a.ctx, request{method: http.MethodPost, path: "/v1/config-plans/" + url.PathEscape(id) + ":apply",
				query: q, body: raw, idempotencyKey: key})
			if err != nil {
				return namingFlags(err, applyFlags{planID: id, confirm: confirm, spHost: spHost, spHostSet: cmd.Flags().Changed("sp-host")})
			}
			if a.json {
				writeRaw(a.stdout, resp.body)
				return nil
			}
			var pl plan
			if err := decode(resp, &pl); err != nil {
				return err
			}
			p := newPalette(a.stdout, a.env)
			if validateOnly {
				fmt.Fprintf(a.stdout, "Plan %s passes every check of the apply (validate only: nothing was written; the plan is still %s).\n", pl.ID, pl.Status)
				return nil
			}
			renderApplied(a.stdout, p, &pl, spHost, resp.replayed())
			return nil
		},
	}
	f := c.Flags()
	f.StringArrayVar(&confirm, "confirm-deletion", nil, "confirm a deletion the plan makes, as KIND/KEY (repeat for each)")
	f.BoolVar(&secretsFromEnv, "secrets-from-env", false, "read each secret the plan needs from the environment variable of that name")
	f.StringVar(&spHost, "sp-host", "", "the environment's service-provider host, needed when the plan writes OIDC material")
	f.StringVar(&key, "idempotency-key", "", "the Idempotency-Key to send (default: a generated one, printed on standard error)")
	f.BoolVar(&validateOnly, "validate-only", false, "run every check of the apply and write nothing")
	return c
}

// secretNamePattern is the only form of environment variable that
// --secrets-from-env reads. The names come from the API's plan, so an API
// URL that points elsewhere (by mistake or by design) could otherwise ask
// for AWS_SECRET_ACCESS_KEY, or any other variable, and receive its value.
var secretNamePattern = regexp.MustCompile(`^KEENAUTH_[A-Z0-9_]+$`)

// secretsFromEnv reads the secrets the plan needs from the environment.
// A name not of secretNamePattern is refused, and its variable never read;
// then every missing variable is reported, by name only. Either refusal
// comes before the apply is sent. The values go into the request body and
// nowhere else.
func (a *app) secretsFromEnv(cl *client, planID string) (map[string]string, error) {
	var pl plan
	if _, err := cl.getJSON(a.ctx, "/v1/config-plans/"+url.PathEscape(planID), nil, &pl); err != nil {
		return nil, err
	}
	var refused []string
	for _, name := range pl.RequiredSecrets {
		if !secretNamePattern.MatchString(name) {
			refused = append(refused, strconv.Quote(name))
		}
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		refused = slices.Compact(refused)
		return nil, fmt.Errorf("plan %s asks for secret(s) %s, but --secrets-from-env reads only environment variables "+
			"named KEENAUTH_[A-Z0-9_]+ (check that KEENAUTH_API_URL points at your Keenauth API); no apply request was sent",
			planID, strings.Join(refused, ", "))
	}
	out := map[string]string{}
	var missing []string
	for _, name := range pl.RequiredSecrets {
		v := a.env(name)
		if v == "" {
			missing = append(missing, name)
			continue
		}
		out[name] = v
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		missing = slices.Compact(missing)
		return nil, usagef("missing environment variable(s) for the secrets plan %s needs: %s; nothing was sent",
			planID, strings.Join(missing, ", "))
	}
	return out, nil
}

// newIdempotencyKey is 128 random bits, in base32.
func newIdempotencyKey() string { return rand.Text() }

// completePlans completes a plan id with the plans of a status ("" for
// any), newest first.
func (a *app) completePlans(status string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		q := url.Values{"limit": {"50"}}
		if status != "" {
			q.Set("status", status)
		}
		var pg page[plan]
		if err := a.completionGet("/v1/config-plans", q, &pg); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, p := range pg.Data {
			if strings.HasPrefix(p.ID, toComplete) {
				out = append(out, cobra.CompletionWithDesc(p.ID, p.Status+" "+p.Summary.short()+" "+p.CreatedAt))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
	}
}

// completionGet reads a list for completion: one attempt, no retries.
func (a *app) completionGet(path string, q url.Values, v any) error {
	a.retryFor = 0
	cl, err := a.api()
	if err != nil {
		return err
	}
	_, err = cl.getJSON(a.ctx, path, q, v)
	return err
}

// noArgs refuses positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return cmdLinef("%s takes no arguments (got %q)", cmd.CommandPath(), args[0])
	}
	return nil
}

// exactArgs requires the one positional argument named name.
func exactArgs(name string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			return cmdLinef("%s needs %s", cmd.CommandPath(), name)
		case len(args) > 1:
			return cmdLinef("%s takes one %s (got %d arguments)", cmd.CommandPath(), name, len(args))
		}
		return nil
	}
}
