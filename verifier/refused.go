package verifier

import (
	"errors"
	"fmt"
	"time"

	"github.com/evident-log/evident/bundle"
	"github.com/evident-log/evident/internal/buildinfo"
)

// RefusedReport is the report on a bundle that bundle.Open refused as ambiguous
// (bundle.ErrAmbiguous: broken, one bundle.unambiguous check per entry), as one whose
// manifest is not a manifest of this format (bundle.ErrManifest: broken, one bundle.manifest
// check) or as beyond a limit (bundle.ErrLimit: not evaluated). No other check runs: which
// bytes are the evidence is not settled. It returns nil for any other error: the file is not a
// bundle at all or cannot be read, or it is a bundle of a later format
// (bundle.ErrNewerFormat), which this verifier cannot judge.
func RefusedReport(err error, o Options) *Report {
	if o.Now == nil {
		o.Now = time.Now
	}
	rep := &Report{Format: ReportFormat, Log: LogReport{Checkpoints: []CheckpointReport{}}, Checks: []Check{}, Chains: []ChainReport{}}
	var ae *bundle.AmbiguityError
	var le *bundle.LimitError
	var me *bundle.ManifestError
	switch {
	case errors.As(err, &ae):
		for i, a := range ae.Entries {
			if i == maxEvidence {
				rep.Checks = append(rep.Checks, Check{Name: CheckBundleUnambiguous, Status: Broken, Code: CodeAmbiguous,
					Detail: fmt.Sprintf("… and %d more ambiguous entries", len(ae.Entries)-i)})
				break
			}
			rep.Checks = append(rep.Checks, Check{Name: CheckBundleUnambiguous, Status: Broken, Code: CodeAmbiguous, Where: a.Name,
				Detail: a.Reason + ": a reader could be shown other bytes than a verifier checks, so the bundle is refused and nothing else in it was checked"})
		}
	case errors.As(err, &me):
		rep.Checks = append(rep.Checks, Check{Name: CheckBundleManifest, Status: Broken, Code: CodeManifest, Where: bundle.ManifestFile,
			Detail: me.Error() + ": the manifest binds every other file, so nothing else in the bundle was checked"})
	case errors.As(err, &le):
		c := Check{Name: CheckBundleLimits, Status: NotEvaluated, Code: CodeLimit, Where: le.Name,
			Detail: fmt.Sprintf("%s is %d, over the verifier's limit of %d: the bundle was not read, so nothing in it was checked", le.Limit, le.Value, le.Max)}
		rep.Checks = append(rep.Checks, c)
	default:
		return nil
	}
	rep.Verdict = Fold(rep.Checks)
	rep.Generated = o.Now().UTC().Format(time.RFC3339)
	rep.Verifier = buildinfo.Read().Program("evident")
	return rep
}
