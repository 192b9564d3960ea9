package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
)

// envVarName is the name --from-key-env may give: a portable environment
// variable name.
var envVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (a *app) promoteCommand() *cobra.Command {
	var (
		fromURL, fromKeyEnv string
		fromVars            []string
		types               []string
		prune, preview      bool
		view                planView
		vf                  varFlags
	)
	c := &cobra.Command{
		Use:   "promote --from-url URL --from-key-env VAR",
		Short: "Plan, in this environment, the configuration of another one",
		Long: `Exports the source environment (the API at --from-url, with the API key held
by the environment variable --from-key-env names: never a key on the command
line), turns the source's values into ${NAME} placeholders with --from-vars,
fills in this environment's values with --vars and --var, and plans the
result here (KEENAUTH_API_URL, KEENAUTH_SECRET_KEY), printed as config plan
prints it.

What differs between the environments (hosts, client ids, lifetimes) is kept
in the variables: each string value of the source equal to a --from-vars
variable's value becomes that variable's placeholder (a value equal to two
variables' values is refused, naming both), and every placeholder must have a
value in --vars or --var: one without is reported with its pointer, and
nothing is planned.

No secret is copied: the plan lists the secrets this environment's apply needs,
as any plan does. The source's versions are not sent (they hold for the
source only). Once the plan is applied, promoting the same source again plans
only no_op changes.

--types promotes only those resource types (the planned types are those
exported); --prune deletes here the resources of those types that the source
does not have; --preview stores nothing. --detailed-exitcode, --format and
the exit statuses are those of config plan.`,
		Example: `  export STAGING_KEY=ksk_…   # the staging environment's key
  keenauth config promote --from-url https://config.keenauth.example --from-key-env STAGING_KEY \
    --from-vars staging.yaml --vars production.yaml --preview
  keenauth config promote --from-url https://config.keenauth.example --from-key-env STAGING_KEY \
    --from-vars staging.yaml --vars production.yaml --types api,application --format markdown`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Every local input first: nothing is sent while one is wrong.
			source, err := a.sourceClient(fromURL, fromKeyEnv)
			if err != nil {
				return err
			}
			from, err := readVariables(fromVars, nil)
			if err != nil {
				return err
			}
			to, err := vf.read()
			if err != nil {
				return err
			}
			if _, err := a.api(); err != nil {
				return err
			}
			q := url.Values{}
			if cmd.Flags().Changed("types") {
				q.Set("types", strings.Join(types, ","))
			}
			resp, err := source.do(a.ctx, request{method: http.MethodGet, path: "/v1/config", query: q})
			if err != nil {
				return fmt.Errorf("the export of the source environment (%s) failed: %w", source.baseURL.Redacted(), err)
			}
			var ex struct {
				Config json.RawMessage `json:"config"`
			}
			if err := decode(resp, &ex); err != nil {
				return err
			}
			templ, err := a.template(ex.Config, from, "the source environment")
			if err != nil {
				return err
			}
			doc, err := resolve(a.stderr, "the source environment's configuration", planDocument{config: templ}, to)
			if err != nil {
				return err
			}
			// The source's versions are not sent: they are the source's.
			doc.versions = nil
			return a.createPlan(doc, prune, preview, view, "")
		},
	}
	f := c.Flags()
	f.StringVar(&fromURL, "from-url", "", "the source environment's API root URL, without /v1")
	f.StringVar(&fromKeyEnv, "from-key-env", "", "the name of the environment variable that holds the source environment's API key")
	f.StringArrayVar(&fromVars, "from-vars", nil, "the source environment's variables, a JSON or YAML object of name → value (repeat: a later file wins)")
	f.StringSliceVar(&types, "types", nil, "promote only these resource types (comma separated: "+strings.Join(kindNames, ",")+")")
	f.BoolVar(&prune, "prune", false, "delete here the resources of the promoted types that the source does not have")
	f.BoolVar(&preview, "preview", false, "show the plan without storing it (no plan id, nothing to apply)")
	_ = c.MarkFlagFilename("from-vars", "json", "yaml", "yml")
	_ = c.RegisterFlagCompletionFunc("types", cobra.FixedCompletions(kindNames, cobra.ShellCompDirectiveNoFileComp))
	vf.add(c)
	view.add(a, c, true)
	view.addFormat(a, c)
	return c
}

// sourceClient is the client of the source environment: its URL, and its
// key read from the environment variable named varName, never from a
// flag. A key given in place of the name is refused without being echoed.
func (a *app) sourceClient(rawURL, varName string) (*client, error) {
	if rawURL == "" {
		return nil, cmdLinef("--from-url URL is required: the source environment's API")
	}
	src, err := url.Parse(rawURL)
	if err != nil || (src.Scheme != "http" && src.Scheme != "https") || src.Host == "" {
		return nil, cmdLinef("--from-url %q is not an http(s) URL", redact(rawURL))
	}
	switch {
	case varName == "":
		return nil, cmdLinef("--from-key-env VAR is required: the environment variable that holds the source environment's API key")
	case strings.HasPrefix(varName, "ksk_"):
		// Not echoed: it is a key, and logs keep what is printed.
		return nil, cmdLinef("--from-key-env takes the name of the environment variable that holds the source's API key, not the key itself (which a command line shows to every process)")
	case !envVarName.MatchString(varName):
		return nil, cmdLinef("--from-key-env %q is not the name of an environment variable (give its name, not the key)", varName)
	}
	key := a.env(varName)
	if key == "" {
		return nil, usagef("the environment variable %s, which --from-key-env names, is not set or empty: it must hold the source environment's API key", varName)
	}
	return &client{baseURL: src, secret: key, http: newHTTPClient(), retryFor: a.retryFor, wait: waiter(a.stderr)}, nil
}

// template turns the values of an exported configuration into the
// placeholders of vars (placeholdersFor), warning on stderr about each
// value holding a variable's value inside a longer string and each
// variable that matched nothing in what.
func (a *app) template(config json.RawMessage, vars variables, what string) (json.RawMessage, error) {
	templ, used, inside, err := placeholdersFor(config, vars)
	if err != nil {
		return nil, err
	}
	for _, w := range inside {
		fmt.Fprintf(a.stderr, "Warning: %s.\n", w)
	}
	for _, name := range sortedNames(vars) {
		if !used[name] {
			fmt.Fprintf(a.stderr, "Warning: variable %s (from %s) matches no value of %s.\n", name, vars[name].source, what)
		}
	}
	return templ, nil
}
