package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want Info
		str  string
	}{
		{"work tree without VCS", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/evident-log/evident", Version: "(devel)"}},
			Info{Module: "github.com/evident-log/evident", Version: "devel", GoVersion: "go1.26.8"}, "devel (go1.26.8)"},
		{"released with VCS", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "m", Version: "v0.3.1"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b9c0d"}, {Key: "vcs.time", Value: "2026-05-17T09:00:00Z"}, {Key: "vcs.modified", Value: "false"}}},
			Info{Module: "m", Version: "v0.3.1", Revision: "1a2b3c4d5e6f7a8b9c0d", Time: "2026-05-17T09:00:00Z", GoVersion: "go1.26.8"},
			"v0.3.1 (rev 1a2b3c4d5e6f, 2026-05-17T09:00:00Z, go1.26.8)"},
		{"dirty work tree", debug.BuildInfo{Main: debug.Module{Version: ""}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}},
			Info{Version: "devel", Revision: "abc", Modified: true}, "devel (rev abc+dirty)"},
		{"nothing recorded", debug.BuildInfo{}, Info{Version: "devel"}, "devel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FromBuildInfo(&tc.bi)
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if s := got.String(); s != tc.str {
				t.Errorf("String() = %q, want %q", s, tc.str)
			}
		})
	}
}

// TestRead: a test binary carries build information; its Go version is the running one.
func TestRead(t *testing.T) {
	i := Read()
	if i.Version == "" || i.GoVersion != runtime.Version() {
		t.Fatalf("%+v", i)
	}
}

// TestStamped: a version stamped at link time (a release build) is the build's version; the
// revision and Go version still come from Go's build information.
func TestStamped(t *testing.T) {
	defer func(old string) { stamped = old }(stamped)
	stamped = "v1.2.3"
	i := Read()
	if i.Version != "v1.2.3" || i.GoVersion != runtime.Version() {
		t.Fatalf("%+v", i)
	}
	stamped = ""
	if i := Read(); i.Version == "v1.2.3" || i.Version == "" {
		t.Fatalf("unstamped: %+v", i)
	}
}
