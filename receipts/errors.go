package receipts

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by this package's parsers,
// verifiers and builders wraps one of them (use errors.Is); the wrapping
// message gives the context. The one exception is a failure of the
// underlying crypto.Signer while signing, which is returned wrapped as is.
var (
	// ErrMalformed reports input that is not well-formed for what was
	// expected: bad CBOR, wrong structure, a missing or ill-typed header
	// parameter, a size bound exceeded, a structurally impossible proof.
	ErrMalformed = errors.New("receipts: malformed input")

	// ErrUnsupportedAlg reports a COSE algorithm, key type or curve that the
	// package does not implement for the requested operation.
	ErrUnsupportedAlg = errors.New("receipts: unsupported algorithm")

	// ErrBadSignature reports a signature that does not verify with the
	// given key (including a key that does not fit the message's alg).
	ErrBadSignature = errors.New("receipts: bad signature")

	// ErrBadProof reports a Merkle proof that does not lead to the expected
	// root, or that the leaf or old root given do not fit.
	ErrBadProof = errors.New("receipts: bad proof")

	// ErrUnsupportedVDS reports a receipt whose verifiable data structure
	// (protected header 395) is not RFC9162_SHA256 (1).
	ErrUnsupportedVDS = errors.New("receipts: unsupported verifiable data structure")

	// ErrUnknownKey reports a receipt that none of the keys given to a verifier of several
	// (VerifyInclusionKeys, VerifyConsistencyKeys) can verify because its kid names none
	// of them, or because no key was given.
	ErrUnknownKey = errors.New("receipts: no given key fits the receipt")

	// ErrEmptyPath reports a receipt that would carry an empty proof path — an inclusion
	// proof in a one-leaf tree, a consistency proof between equal sizes — which the CDDL
	// of RFC 9942 ([ + bstr ]) does not allow. The builders refuse to make one for a
	// consistency proof; the service never cuts one from its log (see doc.go).
	ErrEmptyPath = fmt.Errorf("%w: empty proof path (RFC 9942 requires [ + bstr ])", ErrMalformed)
)
