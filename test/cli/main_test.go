package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/keenauth/configplans/cli"
)

// asKeenauth, set in a process's environment, makes this test binary run
// as the keenauth CLI (cmd/keenauth is cli.Run and a signal handler): the
// documentation's shell commands run it from the PATH without a build.
const asKeenauth = "KEENAUTH_CLI_TEST_AS_KEENAUTH"

func TestMain(m *testing.M) {
	if os.Getenv(asKeenauth) == "1" {
		os.Exit(cli.Run(context.Background(), os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// keenauthOnPath returns a PATH whose first directory holds a keenauth
// that is this test binary, and the variable that makes it act as one.
func keenauthOnPath(t *testing.T) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(dir, "keenauth")); err != nil {
		t.Fatal(err)
	}
	return []string{"PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH"), asKeenauth + "=1"}
}
