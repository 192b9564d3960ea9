// Package cli is the keenauth command-line client of the Keenauth config
// plans API (SPEC §12): its commands, the HTTP client with safe retries,
// and the human rendering of plans, diffs, revisions, logs and problems.
//
// The commands are built on github.com/spf13/cobra: it is the best kept of
// Go's command-line libraries, parses flags before or after positional
// arguments, writes --help from the command tree, and gives shell
// completion (bash, zsh, fish, PowerShell) for free.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// Exit statuses of keenauth.
const (
	// ExitOK: the command did what it was asked.
	ExitOK = 0
	// ExitRefused: the API refused the request, could not be reached at
	// all until --retry-for was spent, or another failure.
	ExitRefused = 1
	// ExitUsage: the command line, an input file or a required environment
	// variable is wrong; nothing was sent.
	ExitUsage = 2
	// ExitChanges: with --detailed-exitcode, the plan has changes (and every
	// failure is ExitRefused, as Terraform does).
	ExitChanges = 2
	// ExitStale: the plan is stale or conflicts with the configuration
	// (409 config_conflict, conflict, config_plan_not_applicable; 410):
	// make a new plan.
	ExitStale = 3
	// ExitUnavailable: the API stayed unavailable or rate limited, or its
	// answer was lost, until --retry-for was spent.
	ExitUnavailable = 4
	// ExitInterrupted: interrupted (Ctrl-C).
	ExitInterrupted = 130
)

// DefaultAPIURL is the API's root when KEENAUTH_API_URL is not set.
const DefaultAPIURL = "http://127.0.0.1:8080"

// DefaultRetryFor is how long a request is retried when --retry-for is not
// given: long enough for a server restarting, short enough that a wrong
// URL is reported within a CI step's patience.
const DefaultRetryFor = 30 * time.Second

const exitStatusHelp = `Exit status:
  0  success
  1  the API refused the request, or could not be reached at all (connection
     refused, a name that does not resolve) after retrying for --retry-for;
     connections test: the test failed
  2  usage: a wrong flag or argument, an unreadable input file, a placeholder
     without a value, a missing environment variable; nothing was sent
  3  the plan is stale or conflicts with the configuration (409
     config_conflict, conflict or config_plan_not_applicable; 410 expired):
     make a new plan; or it lacks approvals (409 approval_required); or
     webhooks retry: the delivery is not failed (409 conflict)
  4  the API stayed unavailable or rate limited, or its answer was lost,
     after retrying for --retry-for
  130  interrupted
With --detailed-exitcode (config plan, show, rebase, promote): 0 no changes,
2 changes present, 1 any failure.`

// app is one invocation: its streams, environment and global flags.
type app struct {
	ctx    context.Context
	env    func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer

	apiURL   string
	secret   string
	json     bool
	retryFor time.Duration

	client *client
	// started is set once a command's own code runs: an error before it is
	// cobra refusing the command line.
	started bool
	// exit is the status of a command that succeeded but has something to
	// say by it (--detailed-exitcode, a failed connection test).
	exit int
	// detailedExit is --detailed-exitcode: every failure exits 1.
	detailedExit bool
}

// usageError is a mistake on the command line or in local input (exit 2).
// cmdLine marks a mistake on the command line itself, answered with a
// pointer to --help.
type usageError struct {
	msg     string
	cmdLine bool
}

func (e *usageError) Error() string { return e.msg }

// usagef is a mistake in local input: a file, an environment variable.
func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// cmdLinef is a mistake on the command line.
func cmdLinef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...), cmdLine: true}
}

// Run runs keenauth with args (without the program name) and returns its
// exit status. env reads environment variables; tests pass their own.
func Run(ctx context.Context, args []string, env func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	a := &app{ctx: ctx, env: env, stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return a.exit
	}
	var ue *usageError
	if !a.started && !errors.As(err, &ue) {
		// cobra refused the command line before any command ran (an
		// unknown command, a wrong number of arguments).
		err = cmdLinef("%v", err)
	}
	if cmd == nil {
		cmd = root
	}
	code := a.fail(cmd, err)
	if a.detailedExit || detailedExitRequested(args) {
		// 2 means "changes present": no failure may look like it.
		return ExitRefused
	}
	return code
}

// detailedExitRequested finds --detailed-exitcode on a command line that
// failed to parse, so that even a usage error exits 1 with it.
func detailedExitRequested(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--detailed-exitcode", "--detailed-exitcode=true":
			return true
		}
	}
	return false
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "keenauth",
		Short: "Manage a Keenauth environment's configuration as code",
		Long: `keenauth exports an environment's configuration as a JSON document, plans
the changes a desired document makes, and applies a reviewed plan in one
transaction. Revisions keep the configuration as it was before each apply
and can be restored; the management log records every apply.

keenauth never follows a redirect: a 3xx answer is an error that names its
Location (exit 1), and nothing is sent there.

A server that cannot be reached, a 429 or a 503 is retried for at most
--retry-for in all (default 30s), each retry announced on standard error.

Environment:
  KEENAUTH_API_URL     the API's root URL, without /v1 (default ` + DefaultAPIURL + `)
  KEENAUTH_SECRET_KEY  the API key (ksk_…) of the environment
  NO_COLOR             when set, no colour even on a terminal

` + exitStatusHelp,
		Example: `  export KEENAUTH_API_URL=https://config.keenauth.example KEENAUTH_SECRET_KEY=ksk_…
  keenauth config export -o keenauth.json
  keenauth config plan -f keenauth.json --prune
  keenauth config apply cfgp_… --confirm-deletion connection/legacy --secrets-from-env --sp-host login.shop.example`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.apiURL, "api-url", "", "the API's root URL without /v1 (default $KEENAUTH_API_URL, else "+DefaultAPIURL+")")
	pf.StringVar(&a.secret, "secret-key", "", "the API key (default $KEENAUTH_SECRET_KEY; prefer the variable: flags show in process lists)")
	pf.BoolVar(&a.json, "json", false, "print the API's JSON answer unchanged")
	pf.DurationVar(&a.retryFor, "retry-for", DefaultRetryFor, "how long in all to keep retrying a server that cannot be reached, 429, 503 and lost answers; each retry is announced on standard error (0: never retry)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		a.started = true
		return nil
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return cmdLinef("%v", err)
	})
	root.CompletionOptions.HiddenDefaultCmd = false
	root.AddCommand(a.configCommand(), a.plansCommand(), a.revisionsCommand(), a.logsCommand(),
		a.connectionsCommand(), a.whoamiCommand(), a.versionCommand())
	root.AddCommand(a.policiesCommand())
	root.AddCommand(a.eventsCommand())
	root.AddCommand(a.webhooksCommand())
	return root
}

// group is a command that only holds subcommands: it shows its help, and
// refuses an unknown subcommand as a usage error.
func group(c *cobra.Command) *cobra.Command {
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return cmdLinef("unknown command %q for %q", args[0], cmd.CommandPath())
		}
		return cmd.Help()
	}
	return c
}

// api returns the client, checking the global settings on first use.
func (a *app) api() (*client, error) {
	if a.client != nil {
		return a.client, nil
	}
	raw := a.apiURL
	if raw == "" {
		raw = a.env("KEENAUTH_API_URL")
	}
	if raw == "" {
		raw = DefaultAPIURL
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usagef("the API URL %q is not an http(s) URL (KEENAUTH_API_URL or --api-url)", redact(raw))
	}
	if strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/v1") {
		root := *u
		root.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1")
		return nil, usagef("the API URL %s ends in /v1: KEENAUTH_API_URL (or --api-url) is the server's root URL, without /v1 (%s)",
			u.Redacted(), root.Redacted())
	}
	secret := a.secret
	if secret == "" {
		secret = a.env("KEENAUTH_SECRET_KEY")
	}
	if secret == "" {
		return nil, usagef("no API key: set KEENAUTH_SECRET_KEY (or pass --secret-key)")
	}
	if a.retryFor < 0 {
		return nil, cmdLinef("--retry-for must not be negative")
	}
	a.client = &client{baseURL: u, secret: secret, http: newHTTPClient(), retryFor: a.retryFor, wait: waiter(a.stderr)}
	return a.client, nil
}

// redact hides a password in a URL that failed to parse as one.
func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	if i := strings.LastIndex(raw, "@"); i >= 0 {
		return "…" + raw[i:]
	}
	return raw
}

// exitCode classifies an error.
func exitCode(err error) int {
	var ue *usageError
	var pe *placeholderError
	var ae *apiError
	var ne *networkError
	switch {
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.As(err, &ue), errors.As(err, &pe):
		return ExitUsage
	case errors.As(err, &ne):
		if ne.unreachable() {
			return ExitRefused
		}
		return ExitUnavailable
	case errors.As(err, &ae):
		return apiExitCode(ae)
	}
	// A redirect, a refused secret name, a local failure.
	return ExitRefused
}

func apiExitCode(e *apiError) int {
	switch {
	case e.status == http.StatusGone:
		return ExitStale
	case e.status == http.StatusConflict:
		switch e.problem.Code {
		case "config_conflict", "conflict", "config_plan_not_applicable", "approval_required":
			return ExitStale
		case "idempotency_key_in_use":
			return ExitUnavailable
		}
	case e.status == http.StatusTooManyRequests:
		return ExitUnavailable
	case e.status >= 500 && e.status != http.StatusNotImplemented:
		return ExitUnavailable
	}
	return ExitRefused
}

// fail reports err on stderr (and, with --json, an API problem unchanged
// on stdout) and returns the exit status.
func (a *app) fail(cmd *cobra.Command, err error) int {
	code := exitCode(err)
	if code == ExitInterrupted {
		fmt.Fprintln(a.stderr, "keenauth: interrupted")
		return code
	}
	var ae *apiError
	if errors.As(err, &ae) && a.json {
		writeRaw(a.stdout, ae.body)
	}
	p := newPalette(a.stderr, a.env)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", p.red("Error:"), errorSentence(err))
	var ne *networkError
	switch {
	case errors.As(err, &ae):
		renderProblemDetails(&b, ae)
	case errors.As(err, &ne):
		if ne.attempts > 1 {
			fmt.Fprintf(&b, "  gave up after %d attempts in %s; --retry-for sets how long to keep trying\n", ne.attempts, ne.waited.Round(time.Second))
		}
	}
	var ue *usageError
	if errors.As(err, &ue) && ue.cmdLine {
		fmt.Fprintf(&b, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	_, _ = io.WriteString(a.stderr, b.String())
	return code
}

// errorSentence ends a one-line message as a sentence.
func errorSentence(err error) string {
	s := strings.TrimSpace(err.Error())
	if s == "" {
		return "failed."
	}
	if !strings.Contains(s, "\n") && !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, ":") {
		s += "."
	}
	return s
}

// writeRaw prints an API answer unchanged, ending the line.
func writeRaw(w io.Writer, body []byte) {
	_, _ = w.Write(body)
	if len(body) == 0 || body[len(body)-1] != '\n' {
		_, _ = io.WriteString(w, "\n")
	}
}
