package verifier

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/evident-log/evident/bundle"
)

// fileState is what the verifier learned about one file listed in the manifest.
type fileState struct {
	done        bool  // read to EOF, so the digest was compared
	err         error // digest mismatch, missing file or read error
	interpreted bool  // a check read its content
}

// trackedFile reads a listed file through bundle.Reader.OpenFile. A digest mismatch at EOF
// is recorded (it becomes a broken CheckBundleDigest check) and reported to the caller as a
// plain EOF, so the deeper checks still look at the content they were given.
type trackedFile struct {
	rc    io.ReadCloser
	state *fileState
}

func (t *trackedFile) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	if err == nil {
		return n, nil
	}
	if err == io.EOF {
		t.state.done = true
		return n, err
	}
	if t.state.err == nil {
		t.state.err = err
	}
	if errors.Is(err, bundle.ErrDigest) {
		t.state.done = true
		return n, io.EOF
	}
	return n, err
}

// Close drains what is left, so the digest of a partly read file is still compared.
func (t *trackedFile) Close() error {
	if !t.state.done && t.state.err == nil {
		if _, err := io.Copy(io.Discard, t); err != nil && t.state.err == nil {
			t.state.err = err
		}
	}
	return t.rc.Close()
}

func (v *verifier) state(name string) *fileState {
	st := v.files[name]
	if st == nil {
		st = &fileState{}
		v.files[name] = st
	}
	return st
}

// listed reports whether the manifest lists name.
func (v *verifier) listed(name string) bool {
	_, ok := v.r.Manifest.Files[name]
	return ok
}

// open opens a listed file for a check.
func (v *verifier) open(name string) (*trackedFile, error) {
	st := v.state(name)
	st.interpreted = true
	if !v.listed(name) {
		return nil, fmt.Errorf("%s is not listed in the manifest", name)
	}
	rc, err := v.r.OpenFile(name)
	if err != nil {
		if st.err == nil {
			st.err = err
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s is listed in the manifest but missing", name)
		}
		return nil, err
	}
	return &trackedFile{rc: rc, state: st}, nil
}

// readSmall reads a whole listed file of at most max bytes. A digest mismatch does not stop
// it (it is reported by the digest check); a larger file is drained and refused.
func (v *verifier) readSmall(name string, max int64) ([]byte, error) {
	f, err := v.open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is over %d bytes", name, max)
	}
	return b, nil
}

// sweepDigests reads every listed file no check has read to the end, then reports digests.
func (v *verifier) sweepDigests() []Check {
	var checks []Check
	names := v.r.List("")
	for i, name := range names {
		if err := v.ctx.Err(); err != nil {
			return nil
		}
		st := v.state(name)
		if !st.done && st.err == nil {
			interpreted := st.interpreted
			if f, err := v.open(name); err == nil {
				_, _ = io.Copy(io.Discard, f)
				f.Close()
			}
			st.interpreted = interpreted
		}
		v.progress("digests", uint64(i+1), uint64(len(names)))
	}
	bad := 0
	for _, name := range names {
		st := v.files[name]
		if st.err == nil {
			continue
		}
		bad++
		c := Check{Name: CheckBundleDigest, Status: Broken, Where: name}
		switch {
		case errors.Is(st.err, bundle.ErrDigest):
			c.Code, c.Detail = CodeDigest, "content differs from the digest the manifest lists: the file was altered or swapped"
			c.Evidence = []string{"manifest: " + v.r.Manifest.Files[name]}
		case errors.Is(st.err, fs.ErrNotExist):
			c.Code, c.Detail = CodeMissing, "listed in the manifest but missing from the bundle"
		default:
			c.Code, c.Detail = CodeRead, "cannot be read: "+st.err.Error()
		}
		checks = append(checks, c)
	}
	if bad == 0 {
		checks = append(checks, Check{Name: CheckBundleDigest, Status: Verified,
			Detail: fmt.Sprintf("all %d listed files match their manifest digests", len(names))})
	}
	var extra []string
	for _, name := range names {
		if !v.files[name].interpreted {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		checks = append(checks, Check{Name: CheckBundleExtra, Status: NotEvaluated, Code: CodeNotInterpreted,
			Detail:   fmt.Sprintf("%d listed file(s) are not interpreted by this verifier (only their digests were checked)", len(extra)),
			Evidence: firstN(extra, maxEvidence)})
	}
	return checks
}

const maxEvidence = 20

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	out := append([]string(nil), s[:n]...)
	return append(out, fmt.Sprintf("… and %d more", len(s)-n))
}
