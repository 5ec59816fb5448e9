// Package profile is the registry of the profile adapters Evident serves, so that evidentd
// and the offline verifier replay exactly the same set, and the one place that lists them.
//
// Everything else Evident knows of a profile it learns here, from the profile itself: the
// codes and checks it documents (ledger.Documented) go to the API's and the docs' tables and
// to the verifier's list of checks, and what it adds to evidentd (service.Provider: settings,
// key files, routes, export files) is served and exported by evidentd. Adding a profile is
// one package of its own and one line in Default.
package profile

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/ledger/profile/cheq"
	"github.com/evident-log/evident/ledger/profile/chieflab"
	"github.com/evident-log/evident/ledger/profile/cop"
	"github.com/evident-log/evident/ledger/profile/owp"
	"github.com/evident-log/evident/ledger/profile/service"
)

// Registry is an ordered set of profiles with distinct names, codes, checks and service
// declarations; the first is the default for new chains. It is immutable once made.
type Registry struct {
	profiles []ledger.Profile
}

// ErrRegistry is returned by New for profiles that cannot be served together.
var ErrRegistry = errors.New("profile registry")

// New returns a registry of the given profiles, the first the default. Two profiles may not
// share a name, define one code or check twice, or declare one setting or key file twice.
func New(ps ...ledger.Profile) (*Registry, error) {
	if len(ps) == 0 {
		return nil, fmt.Errorf("%w: no profile", ErrRegistry)
	}
	r := &Registry{profiles: slices.Clone(ps)}
	names, codes, checks, settings, keys := map[string]bool{}, map[ledger.Code]string{}, map[ledger.CheckName]string{}, map[string]string{}, map[string]string{}
	claim := func(m map[string]string, kind, v, owner string) error {
		if prev, ok := m[v]; ok {
			return fmt.Errorf("%w: %s %q of %s is also %s's", ErrRegistry, kind, v, owner, prev)
		}
		m[v] = owner
		return nil
	}
	for _, p := range ps {
		name := p.Name()
		if name == "" || names[name] {
			return nil, fmt.Errorf("%w: profile name %q empty or twice", ErrRegistry, name)
		}
		names[name] = true
		if d, ok := p.(ledger.Documented); ok {
			for _, c := range d.CodeDocs() {
				if c.Code == "" || c.Kind == "" || c.Meaning == "" {
					return nil, fmt.Errorf("%w: %s: code %q is empty or undocumented", ErrRegistry, name, c.Code)
				}
				if c.HTTP != 0 && (c.HTTP < 400 || c.HTTP > 499) {
					return nil, fmt.Errorf("%w: %s: code %q with HTTP status %d, not a client error", ErrRegistry, name, c.Code, c.HTTP)
				}
				if prev, ok := codes[c.Code]; ok {
					return nil, fmt.Errorf("%w: code %q of %s is also %s's", ErrRegistry, c.Code, name, prev)
				}
				codes[c.Code] = name
			}
			for _, c := range d.CheckDocs() {
				if c.Name == "" || c.Meaning == "" {
					return nil, fmt.Errorf("%w: %s: check %q is empty or undocumented", ErrRegistry, name, c.Name)
				}
				if prev, ok := checks[c.Name]; ok {
					return nil, fmt.Errorf("%w: check %q of %s is also %s's", ErrRegistry, c.Name, name, prev)
				}
				checks[c.Name] = name
			}
		}
		if sp, ok := p.(service.Provider); ok {
			if err := service.Check(sp, nil); err != nil {
				return nil, fmt.Errorf("%w: %s: %w", ErrRegistry, name, err)
			}
			for _, s := range sp.Settings() {
				if err := claim(settings, "setting", s.Name, name); err != nil {
					return nil, err
				}
				if err := claim(settings, "environment variable", s.Env, name); err != nil {
					return nil, err
				}
			}
			for _, k := range sp.KeyFiles() {
				if err := claim(keys, "key file", k.Name, name); err != nil {
					return nil, err
				}
			}
		}
	}
	return r, nil
}

// Default returns the registry of the profiles Evident serves: CHAP 0.3 (the default), then
// OWP-2, COP 1.0, CHEQ and ChiefLab (docs/profiles/).
func Default() *Registry { return builtIn() }

var builtIn = sync.OnceValue(func() *Registry {
	r, err := New(chap.Adapter{}, owp.Adapter{}, cop.Adapter{}, cheq.Adapter{}, chieflab.Adapter{})
	if err != nil {
		panic(err) // the built-in profiles are checked by the package's tests
	}
	return r
})

// All returns the registry's profiles, the default first.
func (r *Registry) All() []ledger.Profile { return slices.Clone(r.profiles) }

// Lookup returns the adapter of a profile name.
func (r *Registry) Lookup(name string) (ledger.Profile, bool) {
	for _, p := range r.profiles {
		if p.Name() == name {
			return p, true
		}
	}
	return nil, false
}

// Codes returns the codes the profiles document, profile by profile in registry order.
func (r *Registry) Codes() []Code {
	var out []Code
	for _, p := range r.profiles {
		if d, ok := p.(ledger.Documented); ok {
			for _, c := range d.CodeDocs() {
				out = append(out, Code{Profile: p.Name(), CodeDoc: c})
			}
		}
	}
	return out
}

// Checks returns the checks the profiles document, profile by profile in registry order.
func (r *Registry) Checks() []Check {
	var out []Check
	for _, p := range r.profiles {
		if d, ok := p.(ledger.Documented); ok {
			for _, c := range d.CheckDocs() {
				out = append(out, Check{Profile: p.Name(), CheckDoc: c})
			}
		}
	}
	return out
}

// Providers returns the profiles that add to evidentd, in registry order.
func (r *Registry) Providers() []Provider {
	var out []Provider
	for _, p := range r.profiles {
		if sp, ok := p.(service.Provider); ok {
			out = append(out, Provider{Profile: p.Name(), Provider: sp})
		}
	}
	return out
}

// Code is one documented code and the profile that defines it.
type Code struct {
	Profile string
	ledger.CodeDoc
}

// Check is one documented check and the profile that runs it.
type Check struct {
	Profile string
	ledger.CheckDoc
}

// Provider is one profile's service declarations.
type Provider struct {
	Profile string
	service.Provider
}

// All returns every profile of the default registry, the default first.
func All() []ledger.Profile { return Default().All() }

// Lookup returns the adapter of a profile name in the default registry.
func Lookup(name string) (ledger.Profile, bool) { return Default().Lookup(name) }

// Extension is one profile's extension of a running evidentd.
type Extension struct {
	Profile string
	service.Extension
}

// Open opens the extension of every provider of the registry, in registry order, each with
// the Env env returns for it, and checks its declarations.
func (r *Registry) Open(env func(Provider) (service.Env, error)) ([]Extension, error) {
	var out []Extension
	paths := map[string]string{}
	for _, p := range r.Providers() {
		e, err := env(p)
		if err != nil {
			return nil, fmt.Errorf("profile %s: %w", p.Profile, err)
		}
		ext, err := p.Open(e)
		if err != nil {
			return nil, fmt.Errorf("profile %s: %w", p.Profile, err)
		}
		if err := service.Check(p, ext); err != nil {
			return nil, fmt.Errorf("profile %s: %w", p.Profile, err)
		}
		for _, rt := range ext.Routes() {
			if prev, ok := paths[rt.Path]; ok {
				return nil, fmt.Errorf("%w: route %q of %s is also %s's", ErrRegistry, rt.Path, p.Profile, prev)
			}
			paths[rt.Path] = p.Profile
		}
		out = append(out, Extension{Profile: p.Profile, Extension: ext})
	}
	return out, nil
}
