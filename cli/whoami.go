package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// apiKey is the answer of GET /v1/api-keys/current.
type apiKey struct {
	ID            string   `json:"id"`
	EnvironmentID string   `json:"environment_id"`
	Permissions   []string `json:"permissions"`
	CreatedAt     string   `json:"created_at"`
}

func (a *app) whoamiCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "whoami",
		Short: "Show the API key in use: its environment, id and permissions",
		Long: `Shows which API the CLI talks to and as whom: the environment and the id of
the API key (never its secret), and every permission it holds. Any valid key
may ask.`,
		Example: `  keenauth whoami
  keenauth whoami --json | jq -r .environment_id`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.api()
			if err != nil {
				return err
			}
			var k apiKey
			raw, err := cl.getJSON(a.ctx, "/v1/api-keys/current", nil, &k)
			if err != nil {
				return err
			}
			if a.json {
				writeRaw(a.stdout, raw)
				return nil
			}
			p := newPalette(a.stdout, a.env)
			fmt.Fprintf(a.stdout, "Environment  %s\n", p.bold(k.EnvironmentID))
			fmt.Fprintf(a.stdout, "API key      %s (created %s)\n", k.ID, k.CreatedAt)
			fmt.Fprintf(a.stdout, "API          %s\n", cl.baseURL.Redacted())
			if len(k.Permissions) == 0 {
				fmt.Fprintln(a.stdout, "Permissions  none")
				return nil
			}
			fmt.Fprintf(a.stdout, "Permissions  %d:\n", len(k.Permissions))
			for _, perm := range k.Permissions {
				fmt.Fprintln(a.stdout, "  "+perm)
			}
			return nil
		},
	}
}

// version and commit are set by a release build:
//
//	go build -ldflags "-X github.com/keenauth/configplans/cli.version=v1.4.0 -X github.com/keenauth/configplans/cli.commit=$(git rev-parse HEAD)" ./cmd/keenauth
//
// Without them the build information of the binary answers: the module
// version (with `go install …@v1.4.0`, or a build with VCS stamping) and
// the VCS commit (`go build -buildvcs=true` in a clone: the go command
// stamps nothing in a git worktree, whose .git is a file).
var version, commit string

// buildVersion is what keenauth version prints.
type buildVersion struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	Modified bool   `json:"modified"`
	Time     string `json:"commit_time,omitempty"`
	Go       string `json:"go"`
}

// readBuildVersion combines the -ldflags values with the binary's build
// information; what neither knows is "devel" (the version) or "unknown"
// (the commit).
func readBuildVersion(bi *debug.BuildInfo, ok bool, ldVersion, ldCommit string) buildVersion {
	v := buildVersion{Version: ldVersion, Commit: ldCommit}
	if ok && bi != nil {
		v.Go = bi.GoVersion
		if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if v.Commit == "" {
					v.Commit = s.Value
				}
			case "vcs.time":
				if ldCommit == "" {
					v.Time = s.Value
				}
			case "vcs.modified":
				v.Modified = ldCommit == "" && s.Value == "true"
			}
		}
	}
	if v.Version == "" {
		v.Version = "devel"
	}
	if v.Commit == "" {
		v.Commit = "unknown"
	}
	if v.Go == "" {
		v.Go = "unknown"
	}
	return v
}

func (v buildVersion) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "keenauth %s\ncommit %s", v.Version, v.Commit)
	if v.Modified {
		b.WriteString(" (with uncommitted changes)")
	}
	if v.Time != "" {
		fmt.Fprintf(&b, " of %s", v.Time)
	}
	fmt.Fprintf(&b, "\nbuilt with %s\n", v.Go)
	if v.Version == "devel" || v.Commit == "unknown" {
		b.WriteString("(a development build: a release build sets the version and commit with -ldflags -X, or stamps them with -buildvcs=true)\n")
	}
	return b.String()
}

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Show the CLI's version and the commit it was built from",
		Long: `Shows the module version of keenauth and the VCS commit it was built from,
from the build information of the binary (or the values a release build set
with -ldflags). It needs no API key and sends nothing.`,
		Example: `  keenauth version
  keenauth version --json | jq -r .commit`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			bi, ok := debug.ReadBuildInfo()
			v := readBuildVersion(bi, ok, version, commit)
			if a.json {
				return writeJSONValue(a.stdout, v)
			}
			_, err := io.WriteString(a.stdout, v.String())
			return err
		},
	}
}

// writeJSONValue prints v as one line of JSON.
func writeJSONValue(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	writeRaw(w, b)
	return nil
}
