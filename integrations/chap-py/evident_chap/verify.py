"""Offline verification of entry receipts `evident-entry-receipt/v1` (docs/entry-receipt.md,
"Verifying", steps 1-6) against a pinned trust file `evident-trust/v1` (docs/trust.md)."""
from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from dataclasses import dataclass

import cbor2
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from . import cbor, note

__all__ = ["Trust", "load_trust", "verify_entry_receipt", "ReceiptError"]

FORMAT = "evident-entry-receipt/v1"
MEMBERS = ("format", "chain", "seq", "statement", "seal", "checkpoint")
SEAL_CONTENT_TYPE = "application/evident-seal+json;version=1"

ALG_EDDSA, ALG_ES256 = -8, -7
H_ALG, H_CTY, H_KID, H_CWT = 1, 3, 4, 15
H_RECEIPTS, H_VDS, H_VDP = 394, 395, 396
H_SEQ, H_PREV = -70001, -70002
CLAIM_SUB = 2
PROOF_INCLUSION = -1
_LINK = re.compile(r"sha256:[0-9a-f]{64}\Z")


class ReceiptError(ValueError):
    """Why a receipt does not verify."""


class TrustError(ValueError):
    """A trust file that cannot be used."""


def _fail(msg: str):
    raise ReceiptError(msg)


def _b64(s, what):
    if not isinstance(s, str):
        _fail(f"{what}: not a string")
    try:
        return base64.b64decode(s.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        _fail(f"{what}: not base64")


# ---- keys and the trust file ---------------------------------------------------------------

@dataclass
class IssuerKey:
    kid: bytes
    alg: int  # -8 or -7
    key: object

    def verify(self, alg: int, msg: bytes, sig: bytes) -> bool:
        if alg != self.alg:
            return False
        try:
            if alg == ALG_EDDSA:
                if len(sig) != 64:
                    return False
                self.key.verify(sig, msg)
            else:
                if len(sig) != 64:
                    return False
                der = encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
                self.key.verify(der, msg, ec.ECDSA(hashes.SHA256()))
            return True
        except InvalidSignature:
            return False


def parse_cose_key(raw: bytes) -> IssuerKey:
    """Reads a public COSE_Key (OKP Ed25519 or EC2 P-256) and computes its RFC 9679 thumbprint."""
    m = cbor.decode(raw)
    if not isinstance(m, dict):
        raise TrustError("COSE_Key is not a map")
    kty, crv = m.get(1), m.get(-1)
    if kty == 1 and crv == 6:
        x = m.get(-2)
        if not isinstance(x, bytes) or len(x) != 32:
            raise TrustError("OKP key: x must be 32 bytes")
        if m.get(3, ALG_EDDSA) != ALG_EDDSA:
            raise TrustError("OKP key with an alg other than EdDSA")
        key, alg = Ed25519PublicKey.from_public_bytes(x), ALG_EDDSA
        thumb = cbor2.dumps({1: 1, -1: 6, -2: x}, canonical=True)
    elif kty == 2 and crv == 1:
        x, y = m.get(-2), m.get(-3)
        if not isinstance(x, bytes) or not isinstance(y, bytes) or len(x) != 32 or len(y) != 32:
            raise TrustError("EC2 key: x and y must be 32 bytes")
        if m.get(3, ALG_ES256) != ALG_ES256:
            raise TrustError("P-256 key with an alg other than ES256")
        try:
            key = ec.EllipticCurvePublicNumbers(int.from_bytes(x, "big"), int.from_bytes(y, "big"),
                                                ec.SECP256R1()).public_key()
        except ValueError:
            raise TrustError("EC2 key: not a point of P-256") from None
        alg = ALG_ES256
        thumb = cbor2.dumps({1: 2, -1: 1, -2: x, -3: y}, canonical=True)
    else:
        raise TrustError(f"unsupported COSE_Key kty {kty!r} crv {crv!r}")
    return IssuerKey(hashlib.sha256(thumb).digest(), alg, key)


@dataclass
class Trust:
    origin: str
    log_keys: list  # [note.Verifier]
    issuers: dict  # kid bytes -> IssuerKey
    policy: object  # note.Policy or None


def load_trust(src) -> Trust:
    """Reads a trust file: a path, JSON text/bytes, or the parsed object."""
    if isinstance(src, Trust):
        return src
    if isinstance(src, dict):
        d = src
    else:
        if isinstance(src, (bytes, bytearray)):
            text = bytes(src).decode("utf-8")
        elif isinstance(src, str) and src.lstrip().startswith("{"):
            text = src
        else:
            with open(src, "rb") as f:
                data = f.read(1 << 20 + 1)
            if len(data) > 1 << 20:
                raise TrustError("trust file over 1 MiB")
            text = data.decode("utf-8")
        d = json.loads(text, object_pairs_hook=_no_dups)
    if not isinstance(d, dict) or d.get("format") != "evident-trust/v1":
        raise TrustError("not an evident-trust/v1 file")
    known = {"format", "origin", "log_keys", "log_mldsa_keys", "issuer_keys", "witness_policy"}
    if set(d) - known:
        raise TrustError(f"unknown members {sorted(set(d) - known)}")
    origin = d.get("origin")
    if not isinstance(origin, str) or not origin:
        raise TrustError("origin missing")
    lks = d.get("log_keys")
    if not isinstance(lks, list) or not lks:
        raise TrustError("log_keys: at least one")
    log_keys = []
    for vk in lks:
        v = note.log_verifier(vk)
        if v.name != origin:
            raise TrustError(f"log key {vk!r} is not named for the origin")
        log_keys.append(v)
    iks = d.get("issuer_keys")
    if not isinstance(iks, list) or not iks:
        raise TrustError("issuer_keys: at least one")
    issuers = {}
    for ik in iks:
        if not isinstance(ik, dict) or not isinstance(ik.get("kid"), str) or not isinstance(ik.get("cose_key"), str):
            raise TrustError("issuer key: kid and cose_key required")
        k = parse_cose_key(base64.b64decode(ik["cose_key"], validate=True))
        if k.kid.hex() != ik["kid"]:
            raise TrustError(f"issuer key {ik['kid']}: kid is not the key's thumbprint")
        if k.kid in issuers:
            raise TrustError(f"issuer key {ik['kid']} twice")
        issuers[k.kid] = k
    policy = None
    if d.get("witness_policy") is not None:
        policy = note.parse_policy(d["witness_policy"])
    return Trust(origin, log_keys, issuers, policy)


def _no_dups(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError(f"duplicate member {k!r}")
        d[k] = v
    return d


# ---- COSE ------------------------------------------------------------------------------------

@dataclass
class Sign1:
    raw: bytes
    parts: list  # raw items
    protected_raw: bytes  # serialized protected map
    protected: dict
    unprotected: dict
    payload: object  # bytes or None
    signature: bytes

    def sig_structure(self, payload: bytes) -> bytes:
        return cbor2.dumps(["Signature1", self.protected_raw, b"", payload])

    def verify_with(self, trust: Trust, payload: bytes, what: str) -> None:
        kid = self.protected.get(H_KID)
        alg = self.protected.get(H_ALG)
        if not isinstance(kid, bytes) or kid not in trust.issuers:
            _fail(f"{what}: kid names no issuer key of the trust file")
        if not trust.issuers[kid].verify(alg, self.sig_structure(payload), self.signature):
            _fail(f"{what}: signature does not verify")

    def sub(self):
        c = self.protected.get(H_CWT)
        return c.get(CLAIM_SUB) if isinstance(c, dict) else None


def parse_sign1(raw: bytes, what: str) -> Sign1:
    try:
        parts = cbor.split_sign1(raw)
        prot_raw = cbor.decode(parts[0])
        if not isinstance(prot_raw, bytes):
            _fail(f"{what}: protected header is not a bstr")
        prot = cbor.decode(prot_raw) if prot_raw else {}
        unprot = cbor.decode(parts[1])
        payload = cbor.decode(parts[2])
        sig = cbor.decode(parts[3])
    except cbor.CBORError as e:
        _fail(f"{what}: malformed COSE_Sign1: {e}")
    if not isinstance(prot, dict) or not isinstance(unprot, dict):
        _fail(f"{what}: headers must be maps")
    if set(prot) & set(unprot):
        _fail(f"{what}: a header label in both buckets")
    if payload is not None and not isinstance(payload, bytes):
        _fail(f"{what}: payload must be a bstr or nil")
    if not isinstance(sig, bytes):
        _fail(f"{what}: signature must be a bstr")
    if prot.get(H_ALG) not in (ALG_EDDSA, ALG_ES256):
        _fail(f"{what}: unsupported alg {prot.get(H_ALG)!r}")
    return Sign1(bytes(raw), parts, prot_raw, prot, unprot, payload, sig)


def _inclusion_path_len(index: int, size: int) -> int:
    inner = (index ^ (size - 1)).bit_length()
    return inner + bin(index >> inner).count("1")


def _root_from_inclusion(index: int, size: int, leaf: bytes, path: list) -> bytes:
    if index >= size or len(path) != _inclusion_path_len(index, size):
        _fail("inclusion proof: bad shape")
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            _fail("inclusion proof: too long")
        if fn & 1 or fn == sn:
            r = hashlib.sha256(b"\x01" + p + r).digest()
            if not fn & 1:
                while True:
                    fn >>= 1
                    sn >>= 1
                    if fn & 1 or fn == 0:
                        break
        else:
            r = hashlib.sha256(b"\x01" + r + p).digest()
        fn >>= 1
        sn >>= 1
    if sn != 0:
        _fail("inclusion proof: too short")
    return r


def _receipt_root(raw: bytes, leaf: bytes, trust: Trust, what: str):
    """Parses an RFC 9942 RFC9162_SHA256 receipt with one inclusion proof, returns
    (root, tree size, leaf index, receipt) after verifying its signature over the root."""
    r = parse_sign1(raw, what)
    if r.protected.get(H_VDS) != 1:
        _fail(f"{what}: vds is not RFC9162_SHA256")
    if r.payload is not None:
        _fail(f"{what}: payload must be detached")
    if not set(r.unprotected) <= {H_VDP, -70010}:
        # Evident writes no other label: one there would be a byte neither signed nor checked
        _fail(f"{what}: unknown unprotected header labels {sorted(set(r.unprotected) - {H_VDP, -70010}, key=str)}")
    vdp = r.unprotected.get(H_VDP)
    if not isinstance(vdp, dict) or set(vdp) != {PROOF_INCLUSION}:
        _fail(f"{what}: want exactly one inclusion proof")
    proofs = vdp[PROOF_INCLUSION]
    if not isinstance(proofs, list) or len(proofs) != 1 or not isinstance(proofs[0], bytes):
        _fail(f"{what}: want exactly one inclusion proof")
    enc = proofs[0]
    try:
        p = cbor.decode(enc)
    except cbor.CBORError as e:
        _fail(f"{what}: proof: {e}")
    if (not isinstance(p, list) or len(p) != 3 or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in p[:2])
            or not isinstance(p[2], list) or not all(isinstance(h, bytes) and len(h) == 32 for h in p[2])):
        _fail(f"{what}: proof is not [tree_size, leaf_index, [32-byte hashes]]")
    if cbor2.dumps(p, canonical=True) != enc:
        _fail(f"{what}: proof is not in deterministic encoding")
    size, index, path = p
    root = _root_from_inclusion(index, size, leaf, path)
    r.verify_with(trust, root, what)
    return root, size, index, r


def verify_entry_receipt(receipt, trust: Trust) -> dict:
    """Verifies an entry receipt (a dict, or its JSON text) against the trust; returns a summary
    {chain, seq, size, log_size} or raises ReceiptError."""
    if isinstance(receipt, (str, bytes, bytearray)):
        try:
            receipt = json.loads(receipt, object_pairs_hook=_no_dups)
        except ValueError as e:
            _fail(f"not a JSON object: {e}")
    # 1. the object
    if not isinstance(receipt, dict):
        _fail("receipt is not an object")
    fmt = receipt.get("format")
    if fmt != FORMAT:
        if isinstance(fmt, str) and fmt.startswith("evident-entry-receipt/"):
            _fail(f"receipt format {fmt!r} was made by a newer Evident: upgrade")
        _fail("not an evident-entry-receipt/v1")
    if set(receipt) != set(MEMBERS):
        _fail(f"members must be exactly {', '.join(MEMBERS)}")
    chain, seq = receipt["chain"], receipt["seq"]
    if not isinstance(chain, str) or not chain:
        _fail("chain: not a string")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        _fail("seq: not an integer from 0")
    if not isinstance(receipt["checkpoint"], str) or not receipt["checkpoint"]:
        _fail("checkpoint: not a string")
    st_raw = _b64(receipt["statement"], "statement")
    seal_raw = _b64(receipt["seal"], "seal")

    # 2. entry statement
    st = parse_sign1(st_raw, "entry statement")
    if st.payload is None:
        _fail("entry statement: detached payload")
    st.verify_with(trust, st.payload, "entry statement")
    if st.sub() != chain:
        _fail("entry statement: CWT sub is not the chain")
    sseq = st.protected.get(H_SEQ)
    if not isinstance(sseq, int) or isinstance(sseq, bool) or sseq != seq:
        _fail("entry statement: seq (-70001) is not the receipt's seq")
    prev = st.protected.get(H_PREV)
    if not isinstance(prev, str) or not _LINK.match(prev):
        _fail("entry statement: prev (-70002) is not a link")
    link = hashlib.sha256(st.payload + prev.encode("utf-8")).digest()
    leaf = hashlib.sha256(b"\x00" + link).digest()

    # 3. chain receipt
    if set(st.unprotected) != {H_RECEIPTS}:
        _fail("entry statement: the unprotected header must hold header 394 alone")
    rl = st.unprotected.get(H_RECEIPTS)
    if not isinstance(rl, list) or len(rl) != 1 or not isinstance(rl[0], bytes):
        _fail("entry statement: header 394 must hold exactly one receipt")
    root_c, size_c, index_c, cr = _receipt_root(rl[0], leaf, trust, "chain receipt")
    if index_c != seq:
        _fail("chain receipt: leaf index is not seq")
    if cr.sub() != chain:
        _fail("chain receipt: CWT sub is not the chain")

    # 4. seal
    seal = parse_sign1(seal_raw, "seal")
    if seal.payload is None:
        _fail("seal: detached payload")
    seal.verify_with(trust, seal.payload, "seal")
    if seal.protected.get(H_CTY) != SEAL_CONTENT_TYPE:
        _fail("seal: content type is not a seal's")
    try:
        sp = json.loads(seal.payload.decode("utf-8"), object_pairs_hook=_no_dups)
    except (ValueError, UnicodeDecodeError):
        _fail("seal: payload is not JSON")
    if not isinstance(sp, dict) or not {"chain", "size", "root", "head"} <= set(sp):
        _fail("seal: payload is not a seal")
    if sp["chain"] != chain:
        _fail("seal: chain differs")
    if not isinstance(sp["size"], int) or isinstance(sp["size"], bool) or sp["size"] != size_c:
        _fail("seal: size is not the chain receipt's tree size")
    if sp["root"] != "sha256:" + root_c.hex():
        _fail("seal: root is not the chain receipt's root")
    if seq == size_c - 1 and sp["head"] != "sha256:" + link.hex():
        _fail("seal: head is not the entry's link")

    # 5. log receipt
    if set(seal.unprotected) != {H_RECEIPTS}:
        _fail("seal: the unprotected header must hold header 394 alone")
    ll = seal.unprotected.get(H_RECEIPTS)
    if not isinstance(ll, list) or len(ll) != 1 or not isinstance(ll[0], bytes):
        _fail("seal: header 394 must hold exactly one receipt")
    entry = hashlib.sha256(b"\xd2\x84" + seal.parts[0] + b"\xa0" + seal.parts[2] + seal.parts[3]).digest()
    root_l, size_l, _, lr = _receipt_root(ll[0], hashlib.sha256(b"\x00" + entry).digest(), trust, "log receipt")

    # 6. checkpoint
    try:
        cp = receipt["checkpoint"].encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate ("\ud800" in the JSON)
        _fail("checkpoint: not UTF-8")
    # step 5: -70010, when present (whatever its value, null included), is checkpoint byte for byte
    if -70010 in lr.unprotected and lr.unprotected[-70010] != cp:
        _fail("log receipt: it carries another checkpoint (header -70010) than the receipt's")
    try:
        body, _ = note.open_note(cp, trust.log_keys)
    except note.NoteError as e:
        _fail(f"checkpoint: {e}")
    lines = body.decode("utf-8").split("\n")
    if len(lines) < 4 or lines[0] != trust.origin:
        _fail("checkpoint: origin is not the trust file's")
    if not lines[1].isdigit() or str(int(lines[1])) != lines[1] or int(lines[1]) != size_l:
        _fail("checkpoint: size is not the log receipt's tree size")
    try:
        cp_root = base64.b64decode(lines[2], validate=True)
    except (binascii.Error, ValueError):
        _fail("checkpoint: root hash is not base64")
    if cp_root != root_l:
        _fail("checkpoint: root hash is not the log receipt's root")
    if trust.policy is not None:
        ok, cosigned, invalid = trust.policy.evaluate(cp)
        if invalid:
            _fail(f"checkpoint: the cosignature of {', '.join(invalid)} does not verify")
        if not ok:
            _fail(f"checkpoint: witness quorum not met (cosigned by {', '.join(cosigned) or 'none'})")
    return {"chain": chain, "seq": seq, "size": size_c, "log_size": size_l}
