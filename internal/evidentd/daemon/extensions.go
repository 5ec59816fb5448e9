package daemon

import (
	"crypto"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/evident-log/evident/internal/evidentd/scitt"
	"github.com/evident-log/evident/internal/evidentd/server"
	"github.com/evident-log/evident/ledger/profile"
	"github.com/evident-log/evident/ledger/profile/service"
)

// openExtensions opens what the served profiles add to evidentd (ledger/profile/service):
// each gets the log's origin, its settings from Config.ProfileSettings, and its key files
// under <data>/keys, created on first start like evidentd's own keys.
func (d *Daemon) openExtensions() ([]profile.Extension, error) {
	exts, err := d.cfg.Profiles.Open(func(p profile.Provider) (service.Env, error) {
		settings := map[string]string{}
		for _, s := range p.Settings() {
			settings[s.Name] = d.cfg.ProfileSettings[s.Name]
		}
		keys := p.KeyFiles()
		return service.Env{Origin: d.cfg.Origin, Settings: settings, Key: func(name string) (crypto.Signer, error) {
			if !slices.ContainsFunc(keys, func(k service.KeyFile) bool { return k.Name == name }) {
				return nil, fmt.Errorf("key file %q is not one %s declares", name, p.Profile)
			}
			return scitt.LoadOrCreateKey(filepath.Join(d.cfg.Data, "keys", name), nil)
		}}, nil
	})
	if err != nil {
		return nil, err
	}
	if err := server.CheckExtensions(exts); err != nil {
		return nil, err
	}
	return exts, nil
}

// profileKeyFiles lists the key files the served profiles declare.
func (d *Daemon) profileKeyFiles() []KeyFile {
	var out []KeyFile
	for _, p := range d.cfg.Profiles.Providers() {
		for _, k := range p.KeyFiles() {
			out = append(out, KeyFile{filepath.Join(d.cfg.Data, "keys", k.Name), true, k.Purpose})
		}
	}
	return out
}
