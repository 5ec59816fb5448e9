// Package scitt is evidentd's transparency service in the sense of the IETF SCITT
// architecture: it signs statements with the service key (COSE_Sign1, RFC 9052, CWT
// claims RFC 9597), registers them in the Tessera log (the log entry is SHA-256 of the
// statement with an empty unprotected header) and cuts RFC 9942 receipts (vds 1) from
// the checkpoint that covers them.
//
// The first entry of an empty log is a genesis entry (GenesisEntry), appended before the
// first statement, so that every receipt the service cuts comes from a tree of at least
// two leaves: an inclusion proof in a one-leaf tree has an empty path, which RFC 9942's
// CDDL ([ + bstr ]) does not allow, and Receipt refuses such a tree (ErrOneLeafTree).
//
// One receipt signature serves every receipt cut at one tree size: the protected header
// and the signed payload (the root) do not depend on the leaf, so the service signs once
// per checkpoint and assembles each receipt from that signature and an inclusion proof.
package scitt

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/evident-log/evident/ledger"
	"github.com/evident-log/evident/log"
	"github.com/evident-log/evident/receipts"
	"github.com/evident-log/evident/servicekey"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// Service signs statements, registers them and issues receipts.
type Service struct {
	log    *log.Log
	signer *receipts.Signer
	issuer string

	mu       sync.Mutex
	rootSigs map[uint64]receipts.RootSignature // recent tree sizes → receipt signature

	genesisMu sync.Mutex
	genesisOK bool // the log is known to be non-empty

	once *claimer // exactly-once appends (once.go); nil without Options.Claims
}

// ErrOneLeafTree reports a receipt asked for from a checkpoint of a one-leaf log: its
// inclusion path would be empty, which RFC 9942 does not allow. It wraps
// receipts.ErrEmptyPath.
var ErrOneLeafTree = fmt.Errorf("one-leaf tree: %w", receipts.ErrEmptyPath)

// genesisPrefix starts the preimage of a log's genesis entry.
const genesisPrefix = "evident-log-genesis/v1\n"

// GenesisEntry is the entry the service appends first to an empty log: SHA-256 of
// "evident-log-genesis/v1\n" followed by the log's origin. It names no statement; anyone
// who knows the origin can recompute it.
func GenesisEntry(origin string) [32]byte {
	return sha256.Sum256([]byte(genesisPrefix + origin))
}

// ensureGenesis appends the genesis entry when the log is still empty, once per service.
func (s *Service) ensureGenesis(ctx context.Context) error {
	s.genesisMu.Lock()
	defer s.genesisMu.Unlock()
	if s.genesisOK {
		return nil
	}
	// A new log whose first checkpoint is not out yet (the distributed driver publishes
	// one only after its first integration) holds nothing published: size 0.
	n, err := publishedSize(ctx, s.log)
	if err != nil {
		return fmt.Errorf("genesis: %w", err)
	}
	if n == 0 {
		// Replicas starting on one empty log all get here; with claims only one appends.
		if _, _, err := s.append(ctx, GenesisEntry(s.log.Origin())); err != nil {
			return fmt.Errorf("genesis: %w", err)
		}
	}
	s.genesisOK = true
	return nil
}

// New returns a service that signs with key as issuer and registers into l.
func New(l *log.Log, key crypto.Signer, issuer string, o Options) (*Service, error) {
	s, err := receipts.NewSigner(key)
	if err != nil {
		return nil, fmt.Errorf("scitt: service key: %w", err)
	}
	if issuer == "" {
		return nil, errors.New("scitt: an issuer name is required")
	}
	return &Service{log: l, signer: s, issuer: issuer, rootSigs: map[uint64]receipts.RootSignature{}, once: newClaimer(l, o)}, nil
}

// Issuer returns the service's issuer name (CWT iss of its statements).
func (s *Service) Issuer() string { return s.issuer }

// Signer returns the service's COSE signer.
func (s *Service) Signer() *receipts.Signer { return s.signer }

// Log returns the underlying transparency log.
func (s *Service) Log() *log.Log { return s.log }

// IssueSeal signs the seal statement of seal (sub = chain id, payload = JCS seal JSON).
func (s *Service) IssueSeal(seal ledger.Seal) ([]byte, [32]byte, error) {
	payload, err := seal.Canonical()
	if err != nil {
		return nil, [32]byte{}, err
	}
	at, err := time.Parse(time.RFC3339Nano, seal.SealedAt)
	if err != nil {
		return nil, [32]byte{}, fmt.Errorf("seal time: %w", err)
	}
	stmt, err := receipts.SignStatement(s.signer, payload, receipts.StatementOptions{
		Claims:      receipts.Claims{Issuer: s.issuer, Subject: seal.Chain, IssuedAt: at.Unix()},
		ContentType: ledger.SealContentType,
	})
	if err != nil {
		return nil, [32]byte{}, fmt.Errorf("sign seal: %w", err)
	}
	entry, err := receipts.EntryHash(stmt)
	if err != nil {
		return nil, [32]byte{}, err
	}
	return stmt, entry, nil
}

// SealOf decodes the seal carried by a seal statement.
func (s *Service) SealOf(statement []byte) (ledger.Seal, error) {
	st, err := receipts.ParseStatement(statement)
	if err != nil {
		return ledger.Seal{}, err
	}
	return ledger.ParseSeal(st.Payload)
}

// Transparent attaches receipt to statement (COSE header 394).
func (s *Service) Transparent(statement, receipt []byte) ([]byte, error) {
	return receipts.AttachReceipts(statement, receipt)
}

// Register appends the statement's entry to the log, waits for a checkpoint covering it,
// and returns its index, that checkpoint and its receipt. Registering the same statement
// twice yields the same index: with Options.Claims in every process sharing them, for
// ever; without, while the log's deduplication remembers it.
func (s *Service) Register(ctx context.Context, statement []byte) (uint64, []byte, []byte, error) {
	entry, err := receipts.EntryHash(statement)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("register: %w", err)
	}
	if err := s.ensureGenesis(ctx); err != nil {
		return 0, nil, nil, fmt.Errorf("register: %w", err)
	}
	idx, cp, err := s.append(ctx, entry)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("register: %w", err)
	}
	rcpt, err := s.Receipt(ctx, idx, cp)
	if errors.Is(err, ErrOneLeafTree) {
		// A log created before the genesis rule that holds this entry alone: grow it by
		// the genesis entry so that the receipt comes from a two-leaf tree.
		if _, cp, err = s.append(ctx, GenesisEntry(s.log.Origin())); err != nil {
			return 0, nil, nil, fmt.Errorf("register: genesis: %w", err)
		}
		rcpt, err = s.Receipt(ctx, idx, cp)
	}
	if err != nil {
		return 0, nil, nil, err
	}
	return idx, cp, rcpt, nil
}

// append appends entry once (once.go) or, without claims, through the log's deduplication.
func (s *Service) append(ctx context.Context, entry [32]byte) (uint64, []byte, error) {
	if s.once != nil {
		return s.once.appendOnce(ctx, entry)
	}
	return s.log.Append(ctx, entry[:])
}

// Receipt cuts the receipt of log entry idx from checkpoint cp; a checkpoint of a
// one-leaf log gives ErrOneLeafTree.
func (s *Service) Receipt(ctx context.Context, idx uint64, cp []byte) ([]byte, error) {
	c, err := log.VerifyCheckpoint(cp, s.log.VerifierKey())
	if err != nil {
		return nil, fmt.Errorf("receipt: %w", err)
	}
	if c.Size < 2 {
		return nil, fmt.Errorf("receipt of entry %d at tree size %d: %w", idx, c.Size, ErrOneLeafTree)
	}
	path, err := s.log.InclusionProof(ctx, idx, c.Size)
	if err != nil {
		return nil, fmt.Errorf("receipt: inclusion proof: %w", err)
	}
	rs, err := s.rootSignature(c.Size, c.Hash)
	if err != nil {
		return nil, err
	}
	return receipts.NewInclusionReceipt(rs, receipts.InclusionProof{TreeSize: c.Size, LeafIndex: idx, Path: path}, cp)
}

// keptRootSigs bounds the receipt signatures rootSignature keeps, one per tree size.
const keptRootSigs = 16

func (s *Service) rootSignature(size uint64, root []byte) (receipts.RootSignature, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rs, ok := s.rootSigs[size]; ok {
		return rs, nil
	}
	rs, err := receipts.SignRoot(s.signer, receipts.Claims{Issuer: s.issuer, Subject: s.log.Origin(), IssuedAt: time.Now().Unix()}, root)
	if err != nil {
		return receipts.RootSignature{}, fmt.Errorf("receipt signature: %w", err)
	}
	if len(s.rootSigs) >= keptRootSigs {
		for k := range s.rootSigs {
			if k < size {
				delete(s.rootSigs, k)
			}
		}
		// Asked for an old size (a receipt re-signed after a key rotation, Registrar.Receipt),
		// none may be smaller: the cache stays bounded all the same.
		for k := range s.rootSigs {
			if len(s.rootSigs) < keptRootSigs {
				break
			}
			delete(s.rootSigs, k)
		}
	}
	s.rootSigs[size] = rs
	return rs, nil
}

// LoadOrCreateKey reads the service's statement key at path — a PEM private key (PKCS#8,
// SEC 1 EC or PKCS#1), or one encrypted with a password in sigstore's "ENCRYPTED SIGSTORE
// PRIVATE KEY" format — creating an Ed25519 key (mode 0600, encrypted when password is set)
// on first start. Ed25519 and ECDSA P-256 keys can sign statements.
func LoadOrCreateKey(path string, password []byte) (crypto.Signer, error) {
	pf := cryptoutils.StaticPasswordFunc(password)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		var pemBytes []byte
		if len(password) > 0 {
			der, err := cryptoutils.MarshalPrivateKeyToEncryptedDER(priv, pf)
			if err != nil {
				return nil, fmt.Errorf("encrypt service key: %w", err)
			}
			pemBytes = pem.EncodeToMemory(&pem.Block{Type: string(cryptoutils.EncryptedSigstorePrivateKeyPEMType), Bytes: der})
		} else if pemBytes, err = cryptoutils.MarshalPrivateKeyToPEM(priv); err != nil {
			return nil, err
		}
		if err := servicekey.WriteNew(path, pemBytes); err != nil {
			return nil, fmt.Errorf("create service key: %w", err)
		}
		return priv, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read service key: %w", err)
	}
	var k crypto.PrivateKey
	if len(password) > 0 {
		k, err = cryptoutils.UnmarshalPEMToPrivateKey(b, pf)
	} else {
		k, err = cryptoutils.UnmarshalPEMToPrivateKey(b, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("service key %s: %w (an encrypted key needs its password)", path, err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("service key: %T cannot sign", k)
	}
	return signer, nil
}
