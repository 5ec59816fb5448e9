// Package buildinfo reports which build of Evident is running: the module version, the
// version-control revision and time it was built from, and the Go toolchain, all read from
// the binary's embedded build information (runtime/debug.ReadBuildInfo). Every binary
// prints it for --version, evidentd writes it into bundle manifests as their producer and
// the verifier records it in its reports. It imports nothing but the standard library, so
// the offline verifier may use it.
package buildinfo

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Info describes one build. Fields the build did not record are empty.
type Info struct {
	// Module is the main module's path, e.g. github.com/evident-log/evident.
	Module string `json:"module,omitempty"`
	// Version is the main module's version ("v0.3.1" when built with go install
	// module@version), or "devel" for a build from a work tree.
	Version string `json:"version"`
	// Revision is the VCS revision the binary was built from (vcs.revision).
	Revision string `json:"revision,omitempty"`
	// Time is the commit time of Revision, RFC 3339 (vcs.time).
	Time string `json:"time,omitempty"`
	// Modified reports uncommitted changes in the work tree at build time (vcs.modified).
	Modified bool `json:"modified,omitempty"`
	// GoVersion is the toolchain that built the binary, e.g. "go1.26.8".
	GoVersion string `json:"go_version,omitempty"`
}

// stamped is the version a release build stamps into the binary with
// -ldflags "-X github.com/evident-log/evident/internal/buildinfo.stamped=v1.2.3"
// (scripts/release.sh); when set it is the build's version, whatever Go recorded.
var stamped string

// Read returns the running binary's build information.
func Read() Info {
	i := Info{Version: "devel"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		i = FromBuildInfo(bi)
	}
	if stamped != "" {
		i.Version = stamped
	}
	return i
}

// FromBuildInfo extracts an Info from Go's build information.
func FromBuildInfo(bi *debug.BuildInfo) Info {
	i := Info{Module: bi.Main.Path, Version: bi.Main.Version, GoVersion: bi.GoVersion}
	if i.Version == "" || i.Version == "(devel)" {
		i.Version = "devel"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision = s.Value
		case "vcs.time":
			i.Time = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		}
	}
	return i
}

// String renders the build on one line, e.g.
// "v0.3.1 (rev 1a2b3c4d5e6f, 2026-05-17T09:00:00Z, go1.26.8)"; parts the build did not record
// are left out.
func (i Info) String() string {
	var parts []string
	if i.Revision != "" {
		rev := i.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if i.Modified {
			rev += "+dirty"
		}
		parts = append(parts, "rev "+rev)
	}
	if i.Time != "" {
		parts = append(parts, i.Time)
	}
	if i.GoVersion != "" {
		parts = append(parts, i.GoVersion)
	}
	if len(parts) == 0 {
		return i.Version
	}
	return fmt.Sprintf("%s (%s)", i.Version, strings.Join(parts, ", "))
}

// Program names a binary with its build, e.g. "evidentd v0.3.1 (rev 1a2b3c4d5e6f, …)": what
// --version prints and what a bundle's producer field carries.
func (i Info) Program(name string) string { return name + " " + i.String() }
