package daemon

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/evident-log/evident/log"
	"github.com/evident-log/evident/servicekey"
)

// KeyFile is one key file evidentd keeps in its data directory, with what it holds and
// whether it is secret. docs/operations.md says what losing each one costs.
type KeyFile struct {
	Path   string
	Secret bool   // a private key: back it up encrypted, never publish it
	Holds  string // what the file is for
}

// KeyFiles lists the key files of this evidentd that exist on disk, secret ones first: the
// files an operator backs up. A service key held by a KMS ("scheme://…") is not a file.
func (d *Daemon) KeyFiles() []KeyFile {
	keys := filepath.Join(d.cfg.Data, "keys")
	all := []KeyFile{
		{filepath.Join(keys, log.KeyFile), true, "log checkpoint signing key (Ed25519); the log's identity: lost, the log cannot grow under its origin"},
		{filepath.Join(keys, log.MLDSAKeyFile), true, "post-quantum checkpoint signing key (ML-DSA-44, --log-mldsa)"},
		{d.cfg.ServiceKey, true, "service statement key: signs seals, statements and receipts (COSE)"},
	}
	all = append(all, d.profileKeyFiles()...)
	all = append(all, []KeyFile{
		{filepath.Join(keys, log.VerifierKeyFile), false, "log verifier key: publish it, verifiers pin it"},
		{filepath.Join(keys, log.MLDSAVerifierKeyFile), false, "post-quantum log verifier key: publish it"},
		{d.keyHistoryPath(), false, "service key history: every key's validity window, the content of /.well-known/scitt-keys"},
		{filepath.Join(filepath.Dir(d.cfg.ServiceKey), servicekey.RetiredDir), true, "retired service private keys (evident keys rotate): nothing reads them again"},
	}...)
	var out []KeyFile
	for _, k := range all {
		if strings.Contains(k.Path, "://") {
			continue
		}
		if _, err := os.Stat(k.Path); err == nil {
			out = append(out, k)
		}
	}
	return out
}
