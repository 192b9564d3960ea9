package cli

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBuildVersionFromBuildInfoOrLdflags(t *testing.T) {
	t.Parallel()
	stamped := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/keenauth/configplans", Version: "v1.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	devel := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/keenauth/configplans", Version: "(devel)"}}
	for name, c := range map[string]struct {
		bi                  *debug.BuildInfo
		ok                  bool
		ldVersion, ldCommit string
		want                buildVersion
	}{
		"stamped by the go command":   {stamped, true, "", "", buildVersion{Version: "v1.4.0", Commit: "0123abcd", Modified: true, Time: "2026-12-01T10:00:00Z", Go: "go1.26.8"}},
		"-buildvcs=false, no ldflags": {devel, true, "", "", buildVersion{Version: "devel", Commit: "unknown", Go: "go1.26.8"}},
		"set by -ldflags":             {devel, true, "v1.5.0", "fedcba98", buildVersion{Version: "v1.5.0", Commit: "fedcba98", Go: "go1.26.8"}},
		"ldflags win over the stamp":  {stamped, true, "v1.5.0", "fedcba98", buildVersion{Version: "v1.5.0", Commit: "fedcba98", Go: "go1.26.8"}},
		"no build information":        {nil, false, "", "", buildVersion{Version: "devel", Commit: "unknown", Go: "unknown"}},
	} {
		got := readBuildVersion(c.bi, c.ok, c.ldVersion, c.ldCommit)
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	s := readBuildVersion(devel, true, "", "").String()
	if !strings.Contains(s, "keenauth devel\ncommit unknown\n") || !strings.Contains(s, "-ldflags") || !strings.Contains(s, "-buildvcs=true") {
		t.Errorf("a development build says:\n%s", s)
	}
	if s := readBuildVersion(stamped, true, "", "").String(); strings.Contains(s, "development") ||
		!strings.HasPrefix(s, "keenauth v1.4.0\ncommit 0123abcd (with uncommitted changes) of 2026-12-01T10:00:00Z\n") {
		t.Errorf("a stamped build says:\n%s", s)
	}
}
