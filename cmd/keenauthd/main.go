// Command keenauthd is the Keenauth config-plans service.
//
//	keenauthd serve                      the server (configuration from KEENAUTHD_* variables)
//	keenauthd dev [--data DIR] [--listen ADDR]   the whole product in one process on embedded storage
//	keenauthd migrate                    apply the database migrations
//	keenauthd env create --name N        create an environment → {"id"}
//	keenauthd key create --env ID --permissions a,b [--owner TEXT] → {"id", "secret"} (shown once)
//	keenauthd key revoke ID [--env ENV_ID]
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "keenauthd:", err)
		os.Exit(exitCode(err))
	}
}

// usageError is a command-line mistake (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg + "\n" + usage }

func exitCode(err error) int {
	if _, ok := err.(usageError); ok {
		return 2
	}
	return 1
}

const usage = `usage:
  keenauthd serve [--no-migrate]
  keenauthd dev [--data DIR] [--listen ADDR]
  keenauthd migrate
  keenauthd env create --name NAME
  keenauthd key create --env ENV_ID --permissions PERM[,PERM…] [--owner TEXT]
  keenauthd key revoke KEY_ID [--env ENV_ID]`

// run is the whole program; tests call it with their own arguments,
// environment and output.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{"no command"}
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	switch args[0] {
	case "serve":
		return serve(ctx, cfg, getenv, args[1:], stdout, stderr)
	case "dev":
		return dev(ctx, cfg, args[1:], stdout, stderr)
	case "migrate":
		return migrate(ctx, cfg, stdout)
	case "env":
		if len(args) < 2 || args[1] != "create" {
			return usageError{"unknown env command"}
		}
		return envCreate(ctx, cfg, args[2:], stdout)
	case "key":
		if len(args) < 2 {
			return usageError{"missing key command"}
		}
		switch args[1] {
		case "create":
			return keyCreate(ctx, cfg, args[2:], stdout)
		case "revoke":
			return keyRevoke(ctx, cfg, args[2:], stdout, stderr)
		}
		return usageError{"unknown key command " + args[1]}
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return usageError{"unknown command " + args[0]}
}
