package profile_test

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile"
	"github.com/evident-log/evident/ledger/profile/chap"
	"github.com/evident-log/evident/ledger/profile/cop"
	"github.com/evident-log/evident/ledger/profile/service"
)

// TestDefault: the served profiles, CHAP first, make a valid registry, and every check a
// profile reports under is one it documents.
func TestDefault(t *testing.T) {
	r := profile.Default()
	var names []string
	for _, p := range r.All() {
		names = append(names, p.Name())
	}
	if want := []string{"chap/0.3", "owp/2", "cop/1.0", "cheq/0", "chieflab/0.1"}; !slices.Equal(names, want) {
		t.Fatalf("profiles %q, want %q", names, want)
	}
	if p, ok := profile.Lookup(chap.Profile); !ok || p.Name() != chap.Profile {
		t.Fatal("Lookup of CHAP")
	}
	if _, ok := r.Lookup("nope/1"); ok {
		t.Fatal("Lookup of an unknown profile")
	}
	if _, err := profile.New(r.All()...); err != nil {
		t.Fatal(err)
	}
	documented := map[ledger.CheckName]bool{}
	for _, c := range r.Checks() {
		documented[c.Name] = true
	}
	for _, p := range r.All() {
		st, err := p.NewState(nil)
		if err != nil {
			t.Fatal(err)
		}
		if a, ok := st.(ledger.Auditor); ok {
			for _, c := range a.Checks() {
				if !documented[c] {
					t.Errorf("%s reports under %q, which it does not document", p.Name(), c)
				}
			}
		}
		if cc, ok := p.(ledger.CrossChain); ok && !documented[cc.ReferenceCheck()] {
			t.Errorf("%s reports references under %q, which it does not document", p.Name(), cc.ReferenceCheck())
		}
		if _, ok := p.(ledger.BundleChecker); ok && !slices.ContainsFunc(r.Checks(), func(c profile.Check) bool { return c.Profile == p.Name() }) {
			t.Errorf("%s checks bundles but documents no check", p.Name())
		}
	}
	if len(r.Providers()) != 1 || r.Providers()[0].Profile != cop.Profile {
		t.Fatalf("providers %+v", r.Providers())
	}
}

// fake is a profile whose declarations a test sets.
type fake struct {
	name     string
	codes    []ledger.CodeDoc
	checks   []ledger.CheckDoc
	settings []service.Setting
	keys     []service.KeyFile
	routes   []service.Route
}

func (f fake) Name() string                                                  { return f.name }
func (f fake) NewState([]byte) (ledger.ProfileState, error)                  { return nil, errors.New("fake") }
func (f fake) CodeDocs() []ledger.CodeDoc                                    { return f.codes }
func (f fake) CheckDocs() []ledger.CheckDoc                                  { return f.checks }
func (f fake) Settings() []service.Setting                                   { return f.settings }
func (f fake) KeyFiles() []service.KeyFile                                   { return f.keys }
func (f fake) Open(service.Env) (service.Extension, error)                   { return f, nil }
func (f fake) Routes() []service.Route                                       { return f.routes }
func (f fake) Export(context.Context, []service.Chain, service.Bundle) error { return nil }

func route(path string) service.Route {
	return service.Route{Path: path, OperationID: "op" + path, Summary: "s", ContentType: "text/plain", WrongProfile: "not_it",
		Serve: func(context.Context, service.Chain, io.Writer) error { return nil }}
}

// TestNewRefuses: a registry refuses what two profiles would both claim, and declarations
// evidentd could not serve.
func TestNewRefuses(t *testing.T) {
	code := ledger.CodeDoc{Code: "x_code", Kind: "refusal", HTTP: 422, Meaning: "m"}
	check := ledger.CheckDoc{Name: "x.check", Meaning: "m"}
	setting := service.Setting{Name: "x-setting", Env: "EVIDENT_X", Usage: "u"}
	key := service.KeyFile{Name: "x.key", Purpose: "p"}
	for _, tc := range []struct {
		name string
		ps   []ledger.Profile
	}{
		{"none", nil},
		{"a name twice", []ledger.Profile{fake{name: "a/1"}, fake{name: "a/1"}}},
		{"an empty name", []ledger.Profile{fake{}}},
		{"a code twice", []ledger.Profile{fake{name: "a/1", codes: []ledger.CodeDoc{code}}, fake{name: "b/1", codes: []ledger.CodeDoc{code}}}},
		{"a code answered 500", []ledger.Profile{fake{name: "a/1", codes: []ledger.CodeDoc{{Code: "y", Kind: "refusal", HTTP: 500, Meaning: "m"}}}}},
		{"an undocumented code", []ledger.Profile{fake{name: "a/1", codes: []ledger.CodeDoc{{Code: "y", Kind: "refusal"}}}}},
		{"a check twice", []ledger.Profile{fake{name: "a/1", checks: []ledger.CheckDoc{check}}, fake{name: "b/1", checks: []ledger.CheckDoc{check}}}},
		{"a setting twice", []ledger.Profile{fake{name: "a/1", settings: []service.Setting{setting}}, fake{name: "b/1", settings: []service.Setting{setting}}}},
		{"a bad setting name", []ledger.Profile{fake{name: "a/1", settings: []service.Setting{{Name: "X Y", Env: "EVIDENT_X", Usage: "u"}}}}},
		{"an env outside EVIDENT_", []ledger.Profile{fake{name: "a/1", settings: []service.Setting{{Name: "x", Env: "PATH", Usage: "u"}}}}},
		{"a key file twice", []ledger.Profile{fake{name: "a/1", keys: []service.KeyFile{key}}, fake{name: "b/1", keys: []service.KeyFile{key}}}},
		{"a key file path", []ledger.Profile{fake{name: "a/1", keys: []service.KeyFile{{Name: "../x.key", Purpose: "p"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := profile.New(tc.ps...); !errors.Is(err, profile.ErrRegistry) {
				t.Fatalf("New: %v", err)
			}
		})
	}
	ok, err := profile.New(fake{name: "a/1", codes: []ledger.CodeDoc{code}, checks: []ledger.CheckDoc{check}, settings: []service.Setting{setting}, keys: []service.KeyFile{key}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ok.Codes()) != 1 || ok.Codes()[0].Profile != "a/1" || len(ok.Checks()) != 1 || len(ok.Providers()) != 1 {
		t.Fatalf("codes %+v checks %+v", ok.Codes(), ok.Checks())
	}
}

// TestOpen: every provider is opened with its own Env; two profiles may not serve one route,
// and a route evidentd could not serve or describe is refused.
func TestOpen(t *testing.T) {
	env := func(p profile.Provider) (service.Env, error) {
		return service.Env{Origin: "o", Key: func(string) (crypto.Signer, error) {
			_, k, err := ed25519.GenerateKey(nil)
			return k, err
		}}, nil
	}
	r, _ := profile.New(fake{name: "a/1", routes: []service.Route{route("r")}}, fake{name: "b/1", routes: []service.Route{route("s")}})
	exts, err := r.Open(env)
	if err != nil || len(exts) != 2 || exts[0].Profile != "a/1" || exts[1].Routes()[0].Path != "s" {
		t.Fatalf("%+v %v", exts, err)
	}
	r, _ = profile.New(fake{name: "a/1", routes: []service.Route{route("r")}}, fake{name: "b/1", routes: []service.Route{route("r")}})
	if _, err := r.Open(env); !errors.Is(err, profile.ErrRegistry) {
		t.Fatalf("one route twice: %v", err)
	}
	bad := route("R/x")
	r, _ = profile.New(fake{name: "a/1", routes: []service.Route{bad}})
	if _, err := r.Open(env); !errors.Is(err, service.ErrDeclaration) {
		t.Fatalf("a bad route path: %v", err)
	}
	noServe := route("r")
	noServe.Serve = nil
	r, _ = profile.New(fake{name: "a/1", routes: []service.Route{noServe}})
	if _, err := r.Open(env); !errors.Is(err, service.ErrDeclaration) {
		t.Fatalf("a route without Serve: %v", err)
	}
	failing, _ := profile.New(fake{name: "a/1"})
	if _, err := failing.Open(func(profile.Provider) (service.Env, error) { return service.Env{}, errors.New("no keys") }); err == nil {
		t.Fatal("an Env that failed opened")
	}
}
