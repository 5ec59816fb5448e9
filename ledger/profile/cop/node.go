package cop

import (
	"crypto"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/evident-log/evident/internal/sigalg"
	"github.com/evident-log/evident/ledger/canonical"
)

// NodeKeysFormat is the format string of a node key file (trust/cop-nodes.json in a bundle).
const NodeKeysFormat = "evident-cop-nodes/v1"

// ThumbprintURIPrefix starts a key id that is an RFC 9278 JWK Thumbprint URI (SHA-256, RFC 7638).
const ThumbprintURIPrefix = "urn:ietf:params:oauth:jwk-thumbprint:sha-256:"

// ErrNodeKey reports an unusable node key or node key file.
var ErrNodeKey = errors.New("COP node key")

// NodeKeyID returns the key id Evident gives a node key: its RFC 9278 JWK Thumbprint URI,
// urn:ietf:params:oauth:jwk-thumbprint:sha-256:<base64url(SHA-256(RFC 7638 thumbprint input))>.
// The RFC 7638 input is the JCS of the key's required JWK members, which is what sigalg.JWK holds.
func NodeKeyID(pub crypto.PublicKey) (string, error) {
	jwk, err := sigalg.JWK(pub)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNodeKey, err)
	}
	b, err := canonical.Encode(jwk)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNodeKey, err)
	}
	d := sha256.Sum256(b)
	return ThumbprintURIPrefix + base64.RawURLEncoding.EncodeToString(d[:]), nil
}

// NewNode returns the node Evident writes its COP Ledger as. The key must be Ed25519: its
// signatures are deterministic (RFC 8032), so the ledger is a pure function of the chain and
// the key and evidentd re-derives it byte for byte whenever it is read (docs/profiles/cop.md).
func NewNode(id string, key crypto.Signer) (*Node, error) {
	if _, ok := key.Public().(ed25519.PublicKey); !ok {
		return nil, fmt.Errorf("%w: Evident's node key must be Ed25519 (deterministic signatures), not %T", ErrNodeKey, key.Public())
	}
	if id == "" {
		return nil, fmt.Errorf("%w: empty node id", ErrNodeKey)
	}
	kid, err := NodeKeyID(key.Public())
	if err != nil {
		return nil, err
	}
	return &Node{ID: id, KeyID: kid, Signer: key}, nil
}

// NodeKey is one node's public ledger key, as a node key file lists it.
type NodeKey struct {
	NodeID string
	KeyID  string
	Public crypto.PublicKey
}

// MarshalNodeKeys writes a node key file:
//
//	{"format":"evident-cop-nodes/v1","nodes":[{"nodeId":…,"keyId":…,"jwk":{…}}]}
//
// in JCS, followed by a newline.
func MarshalNodeKeys(keys []NodeKey) ([]byte, error) {
	nodes := make([]canonical.Value, 0, len(keys))
	for _, k := range keys {
		jwk, err := sigalg.JWK(k.Public)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrNodeKey, k.KeyID, err)
		}
		nodes = append(nodes, &canonical.Object{Members: []canonical.Member{{Key: "nodeId", Value: k.NodeID}, {Key: "keyId", Value: k.KeyID}, {Key: "jwk", Value: jwk}}})
	}
	b, err := canonical.Encode(&canonical.Object{Members: []canonical.Member{{Key: "format", Value: NodeKeysFormat}, {Key: "nodes", Value: nodes}}})
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// maxNodeKeys bounds the keys a node key file may list.
const maxNodeKeys = 256

// ParseNodeKeys reads a node key file (MarshalNodeKeys). Unknown members, a repeated keyId,
// an unusable JWK or a private key member are refused.
func ParseNodeKeys(b []byte) ([]NodeKey, error) {
	v, err := canonical.Parse(b, canonical.Options{})
	if err != nil {
		return nil, fmt.Errorf("%w file: %v", ErrNodeKey, err)
	}
	o, ok := v.(*canonical.Object)
	if !ok {
		return nil, fmt.Errorf("%w file: not an object", ErrNodeKey)
	}
	if err := onlyMembers(o, "format", "nodes"); err != nil {
		return nil, err
	}
	if f, _ := o.String("format"); f != NodeKeysFormat {
		return nil, fmt.Errorf("%w file: format %.40q, want %s", ErrNodeKey, f, NodeKeysFormat)
	}
	nv, _ := o.Get("nodes")
	arr, ok := nv.([]canonical.Value)
	if !ok || len(arr) == 0 || len(arr) > maxNodeKeys {
		return nil, fmt.Errorf("%w file: nodes must be an array of 1..%d keys", ErrNodeKey, maxNodeKeys)
	}
	out := make([]NodeKey, 0, len(arr))
	for i, e := range arr {
		no, ok := e.(*canonical.Object)
		if !ok {
			return nil, fmt.Errorf("%w file: node %d is not an object", ErrNodeKey, i)
		}
		if err := onlyMembers(no, "nodeId", "keyId", "jwk"); err != nil {
			return nil, err
		}
		k := NodeKey{}
		k.NodeID, _ = no.String("nodeId")
		k.KeyID, _ = no.String("keyId")
		jo, _ := no.Object("jwk")
		if k.NodeID == "" || k.KeyID == "" {
			return nil, fmt.Errorf("%w file: node %d needs nodeId and keyId", ErrNodeKey, i)
		}
		if k.Public, err = sigalg.ParseJWK(jo); err != nil {
			return nil, fmt.Errorf("%w file: node %d: %v", ErrNodeKey, i, err)
		}
		if slices.ContainsFunc(out, func(o NodeKey) bool { return o.KeyID == k.KeyID }) {
			return nil, fmt.Errorf("%w file: keyId %.80q listed twice", ErrNodeKey, k.KeyID)
		}
		out = append(out, k)
	}
	return out, nil
}

func onlyMembers(o *canonical.Object, names ...string) error {
	for _, m := range o.Members {
		if !slices.Contains(names, m.Key) {
			return fmt.Errorf("%w file: unknown member %.40q", ErrNodeKey, m.Key)
		}
	}
	return nil
}

// ParsePublicKey reads public keys for checking an imported ledger: a JWK (OKP Ed25519,
// EC P-256, RSA 3072) whose optional "kid" names the keyId it verifies, or a node key file
// (every key it lists). A key without a key id verifies records of any keyId
// (LedgerCheck.AnyKey). PEM keys are the CLI's business: this package stays free of
// crypto/x509 (and so of net) for the offline verifier.
func ParsePublicKey(b []byte) ([]NodeKey, error) {
	s := strings.TrimSpace(string(b))
	v, err := canonical.Parse([]byte(s), canonical.Options{})
	if err != nil {
		return nil, fmt.Errorf("%w: not a JWK or node key file: %v", ErrNodeKey, err)
	}
	o, ok := v.(*canonical.Object)
	if !ok {
		return nil, fmt.Errorf("%w: a key is a JSON object", ErrNodeKey)
	}
	if _, isFile := o.Get("format"); isFile {
		return ParseNodeKeys([]byte(s))
	}
	kid, _ := o.String("kid")
	pub, err := sigalg.ParseJWK(o)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNodeKey, err)
	}
	return []NodeKey{{KeyID: kid, Public: pub}}, nil
}

// CheckPublicKey reports whether pub is a key type ledger signatures can use.
func CheckPublicKey(pub crypto.PublicKey) error {
	if _, err := sigalg.JWK(pub); err != nil {
		return fmt.Errorf("%w: unsupported key type %T", ErrNodeKey, pub)
	}
	return nil
}
