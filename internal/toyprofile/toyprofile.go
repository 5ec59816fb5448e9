// Package toyprofile is a profile made for tests of the profile seam: everything it adds to
// Evident it declares in this one package — a refusal code, a verifier check with its codes,
// a setting, a key file, a route below its chains and a file in export bundles — and the
// registry (ledger/profile) carries it to evidentd, the verifier and the docs. It is not
// served by default.
//
// A toy record is a JSON object {"id": "...", "n": N}: N counts up from 1 in each chain.
// The route GET /v1/chains/{chain}/toy-tally answers "<greeting> <entries>\n"; a bundle
// carries chains/<dir>/toy-tally.txt with the same line and trust/toy.pub, the toy key.
package toyprofile

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/ledger/profile/service"
)

// The toy profile's names.
const (
	Profile                          = "toy/1"
	CodeGap         ledger.Code      = "toy_gap"          // refusal (409): n is not the previous + 1
	CodeNotToy      ledger.Code      = "not_toy"          // problem: the tally of a chain that is not a toy chain
	CodeTallyWrong  ledger.Code      = "toy_tally_wrong"  // verification: the bundle's tally is not its entries'
	CodeTallyAbsent ledger.Code      = "toy_tally_absent" // verification (not evaluated): no tally in the bundle
	CheckTally      ledger.CheckName = "toy.tally"
	GreetingSetting                  = "toy-greeting"
	KeyFile                          = "toy.key"
	Route                            = "toy-tally"
	PublicKeyFile                    = "trust/toy.pub"
)

// TallyFile returns the path of a chain's tally in a bundle.
func TallyFile(dir string) string { return "chains/" + dir + "/toy-tally.txt" }

// Adapter is the toy profile.
type Adapter struct{}

var (
	_ ledger.Profile       = Adapter{}
	_ ledger.Documented    = Adapter{}
	_ ledger.BundleChecker = Adapter{}
	_ service.Provider     = Adapter{}
)

// Name returns "toy/1".
func (Adapter) Name() string { return Profile }

// NewState returns the state of an empty chain or restores a persisted one.
func (Adapter) NewState(persisted []byte) (ledger.ProfileState, error) {
	st := &State{}
	if len(persisted) > 0 {
		if err := json.Unmarshal(persisted, st); err != nil {
			return nil, fmt.Errorf("toy state: %w", err)
		}
	}
	return st, nil
}

// State is the last n a chain admitted.
type State struct {
	N int64 `json:"n"`
}

// Clone returns a copy.
func (s *State) Clone() ledger.ProfileState { c := *s; return &c }

// MarshalJSON persists the state.
func (s *State) MarshalJSON() ([]byte, error) {
	type plain State
	return json.Marshal((*plain)(s))
}

// Admit admits a record whose n is the previous + 1.
func (s *State) Admit(at ledger.Position, record []byte) (*ledger.Admission, error) {
	var r struct {
		ID string `json:"id"`
		N  int64  `json:"n"`
	}
	dec := json.NewDecoder(bytes.NewReader(record))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil || r.ID == "" {
		return nil, ledger.Refuse(ledger.CodeMalformed, "not a toy record: %v", err)
	}
	if r.N != s.N+1 {
		return nil, ledger.Refuse(CodeGap, "n %d after %d", r.N, s.N)
	}
	s.N = r.N
	return &ledger.Admission{Canonical: bytes.Clone(record), RecordID: r.ID, Method: "toy"}, nil
}

// CodeDocs documents the toy codes.
func (Adapter) CodeDocs() []ledger.CodeDoc {
	return []ledger.CodeDoc{
		{Code: CodeGap, Kind: "refusal", HTTP: 409, Meaning: "Toy: `n` is not the previous + 1"},
		{Code: CodeNotToy, Kind: "problem", HTTP: 404, Meaning: "`GET …/toy-tally` of a chain that is not a toy chain"},
		{Code: CodeTallyWrong, Kind: "verification", Meaning: "Toy: the bundle's tally is not the count of its entries"},
		{Code: CodeTallyAbsent, Kind: "verification (not evaluated)", Meaning: "Toy: a toy chain exported without its tally"},
	}
}

// CheckDocs documents the toy check.
func (Adapter) CheckDocs() []ledger.CheckDoc {
	return []ledger.CheckDoc{{Name: CheckTally, Meaning: "Toy: the bundle's tally counts the chain's entries"}}
}

// CheckBundle compares the bundle's tally with the chain's entries.
func (Adapter) CheckBundle(ctx context.Context, ch ledger.BundleChain) []ledger.Verdict {
	name := TallyFile(ch.Dir())
	v := ledger.Verdict{Check: CheckTally, Where: name}
	if !ch.Listed(name) {
		v.Severity, v.Code, v.Detail = ledger.Notice, CodeTallyAbsent, "no tally in the bundle"
		return []ledger.Verdict{v}
	}
	b, err := ch.ReadFile(name, 1<<10)
	if err != nil {
		v.Severity, v.Code, v.Detail = ledger.Critical, ledger.CodeFileMissing, err.Error()
		return []ledger.Verdict{v}
	}
	er, err := ch.Entries()
	if err != nil {
		v.Severity, v.Code, v.Detail = ledger.Notice, ledger.CodeNotReplayed, err.Error()
		return []ledger.Verdict{v}
	}
	defer er.Close()
	var n int
	for {
		if _, err := er.Next(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			v.Severity, v.Code, v.Detail = ledger.Notice, ledger.CodeNotReplayed, err.Error()
			return []ledger.Verdict{v}
		}
		n++
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 || fields[1] != fmt.Sprint(n) {
		v.Severity, v.Code, v.Detail = ledger.Critical, CodeTallyWrong, fmt.Sprintf("tally %q for %d entries", b, n)
		return []ledger.Verdict{v}
	}
	v.Detail = fmt.Sprintf("%d entries", n)
	return []ledger.Verdict{v}
}

// Settings returns the greeting setting.
func (Adapter) Settings() []service.Setting {
	return []service.Setting{{Name: GreetingSetting, Env: "EVIDENT_TOY_GREETING", Usage: "the word the toy tally starts with (default hello)"}}
}

// KeyFiles returns the toy key.
func (Adapter) KeyFiles() []service.KeyFile {
	return []service.KeyFile{{Name: KeyFile, Purpose: "toy key: published in toy bundles"}}
}

// Open returns the toy extension.
func (Adapter) Open(env service.Env) (service.Extension, error) {
	k, err := env.Key(KeyFile)
	if err != nil {
		return nil, err
	}
	pub, ok := k.Public().(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("toy key is %T", k.Public())
	}
	g := env.Settings[GreetingSetting]
	if g == "" {
		g = "hello"
	}
	return ext{greeting: g, pub: pub}, nil
}

type ext struct {
	greeting string
	pub      ed25519.PublicKey
}

func (e ext) tally(ctx context.Context, c service.Chain, w io.Writer) error {
	var n uint64
	if err := c.Entries(ctx, func(ledger.Entry) error { n++; return nil }); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%s %d\n", e.greeting, n)
	return err
}

func (e ext) Routes() []service.Route {
	return []service.Route{{Path: Route, OperationID: "getToyTally", Summary: "The tally of a toy chain", ContentType: "text/plain; charset=utf-8",
		WrongProfile: string(CodeNotToy), Serve: e.tally}}
}

func (e ext) Export(ctx context.Context, chains []service.Chain, b service.Bundle) error {
	for _, c := range chains {
		w, err := b.Create(TallyFile(c.Dir()))
		if err != nil {
			return err
		}
		if err := e.tally(ctx, c, w); err != nil {
			return err
		}
	}
	return b.WriteFile(PublicKeyFile, []byte(hex.EncodeToString(e.pub)+"\n"))
}
