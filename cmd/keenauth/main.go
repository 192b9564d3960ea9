// Command keenauth is the command-line client of the Keenauth config plans
// API: export the configuration, plan a document, review and apply the
// plan, rebase a plan onto the configuration now, promote one environment's
// configuration to another, list, compare and restore revisions, read the
// management log.
//
//	keenauth config export [--types connection,api] [-o FILE] [--vars FILE]… [--var NAME=VALUE]…
//	keenauth config plan -f FILE [--vars FILE]… [--var NAME=VALUE]… [--prune] [--preview] [--show-unchanged] [--detailed-exitcode] [--format text|json|markdown]
//	keenauth config show PLAN [--show-unchanged] [--detailed-exitcode] [--format text|json|markdown]
//	keenauth config rebase PLAN [--show-unchanged] [--detailed-exitcode] [--format text|json|markdown]
//	keenauth config promote --from-url URL --from-key-env VAR [--from-vars FILE]… [--vars FILE]… [--var NAME=VALUE]… [--types k,…] [--prune] [--preview] [--detailed-exitcode] [--format text|json|markdown]
//	keenauth config apply PLAN [--confirm-deletion KIND/KEY]… [--secrets-from-env] [--sp-host H] [--idempotency-key K] [--validate-only]
//	keenauth plans list [--status S] [--limit N]
//	keenauth revisions list | show ID | diff ID | restore ID
//	keenauth logs [--type T]
//	keenauth connections test KEY
//	keenauth whoami
//	keenauth version
//	keenauth completion bash|zsh|fish|powershell
//
// KEENAUTH_API_URL (the server's root URL, without /v1) and
// KEENAUTH_SECRET_KEY configure it; --json prints the API's answers
// unchanged; --retry-for (30s) bounds the retries, each announced on
// standard error. It is built on github.com/spf13/cobra, the best kept of Go's
// command-line libraries, which gives shell completion for free. The
// commands live in package cli; `keenauth --help` lists the exit statuses.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/keenauth/configplans/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole program; tests call it with their own arguments,
// environment and streams, and get the exit status.
func run(ctx context.Context, args []string, env func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cli.Run(ctx, args, env, stdin, stdout, stderr)
}
