// Package service declares what a profile adds to evidentd beyond admitting records: settings
// an operator gives it, key files it signs with, routes it serves below a chain, and files it
// writes into an export bundle. A profile offers them by implementing Provider; evidentd
// takes them from the registry (ledger/profile) and never names a profile.
//
// The package holds only declarations, so that a profile and the verifier can import it
// without importing any of the service's code.
package service

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"regexp"

	"github.com/evident-log/evident/ledger"
)

// Provider is implemented by a ledger.Profile that adds to evidentd. Evidentd calls Open once
// at start, after the key files and settings it declares are in place, and serves the
// returned Extension until it stops.
type Provider interface {
	// Settings returns the settings an operator can give the profile (flags of evidentd).
	Settings() []Setting
	// KeyFiles returns the key files the profile signs with, under the data directory's keys/.
	KeyFiles() []KeyFile
	// Open returns the profile's extension of one evidentd.
	Open(env Env) (Extension, error)
}

// Extension is what one evidentd serves and exports for a profile.
type Extension interface {
	// Routes returns the routes served below /v1/chains/{chain}/ for chains of the profile.
	Routes() []Route
	// Export adds the profile's own files to a bundle that holds the given chains of the
	// profile (at least one), each up to its exported size.
	Export(ctx context.Context, chains []Chain, b Bundle) error
}

// Setting is one setting of a profile: the evidentd flag --<Name>, read from the
// environment variable Env when the flag is not given.
type Setting struct {
	Name  string // flag name, e.g. "cop-node-id"
	Env   string // environment variable, e.g. "EVIDENT_COP_NODE_ID"
	Usage string // the flag's help text
}

// KeyFile is one Ed25519 key file of a profile under <data>/keys: created on first start,
// backed up with the other keys, and handed to Open through Env.Key.
type KeyFile struct {
	Name    string // file name, e.g. "cop-node.key"
	Purpose string // what it signs, for the key inventory
}

// Env is what evidentd gives a profile's Open.
type Env struct {
	Origin   string                                   // the log's origin
	Settings map[string]string                        // the values of the declared settings ("" when not set)
	Key      func(name string) (crypto.Signer, error) // the signer of a declared key file
}

// Route is one GET route of a profile, served at /v1/chains/{chain}/<Path> for the chains of
// the profile; for a chain of another profile evidentd answers 404 with WrongProfile.
type Route struct {
	Path         string // one path segment below the chain, e.g. "cop-ledger"
	OperationID  string // the OpenAPI operationId, e.g. "getCOPLedger"
	Summary      string // the OpenAPI summary
	ContentType  string // the media type of the body Serve writes
	WrongProfile string // the problem code of a chain of another profile, e.g. "not_cop"
	// Serve writes the route's answer for the chain. An error before the first write is
	// answered as an internal error; after it, the answer is cut short.
	Serve func(ctx context.Context, c Chain, w io.Writer) error
}

// Chain is one chain as evidentd hands it to an extension: its entries up to Size, which a
// route reads at the request's moment and an export at the bundle's.
type Chain interface {
	ID() string
	Profile() string
	Size() uint64
	// Dir is the chain's directory under chains/ in a bundle.
	Dir() string
	// Entries calls fn with each entry from seq 0 up to Size, in order, and stops at the first
	// error fn returns.
	Entries(ctx context.Context, fn func(ledger.Entry) error) error
}

// Bundle is the export bundle an extension adds files to. Names are paths inside the bundle
// (docs/bundle.md); the manifest lists every file with its digest.
type Bundle interface {
	Create(name string) (io.Writer, error)
	WriteFile(name string, data []byte) error
}

// ErrDeclaration is returned by Check for a declaration evidentd cannot serve.
var ErrDeclaration = errors.New("service: bad declaration")

var (
	segment = regexp.MustCompile(`^[a-z][a-z0-9-]{0,63}$`)
	envName = regexp.MustCompile(`^EVIDENT_[A-Z0-9_]{1,64}$`)
	keyName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,63}\.key$`)
)

// Check checks a provider's declarations: flag names and route paths are lower-case
// segments, environment variables start with EVIDENT_, key files are plain names, and a
// route has what evidentd needs to serve and describe it.
func Check(p Provider, ext Extension) error {
	for _, s := range p.Settings() {
		if !segment.MatchString(s.Name) || !envName.MatchString(s.Env) || s.Usage == "" {
			return fmt.Errorf("%w: setting %q (env %q)", ErrDeclaration, s.Name, s.Env)
		}
	}
	for _, k := range p.KeyFiles() {
		if !keyName.MatchString(k.Name) || k.Purpose == "" {
			return fmt.Errorf("%w: key file %q", ErrDeclaration, k.Name)
		}
	}
	if ext == nil {
		return nil
	}
	for _, r := range ext.Routes() {
		if !segment.MatchString(r.Path) || r.OperationID == "" || r.Summary == "" || r.ContentType == "" || r.WrongProfile == "" || r.Serve == nil {
			return fmt.Errorf("%w: route %q", ErrDeclaration, r.Path)
		}
	}
	return nil
}
