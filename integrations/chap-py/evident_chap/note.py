"""C2SP signed notes (golang.org/x/mod/sumdb/note), tlog-cosignature cosignature/v1
and the tlog-policy witness policy format, as far as a verifier needs them.

Port of tlogpolicy/policy.go and tlogpolicy/cosig.go: Ed25519 keys are verified;
an ML-DSA-44 witness (key type 0x06) is parsed but never counts, having no verifier
in the Python standard library or cryptography 38.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

__all__ = ["NoteError", "Verifier", "log_verifier", "cosignature_verifier", "parse_note",
           "open_note", "Policy", "parse_policy"]

ALG_ED25519 = 0x01
ALG_COSIG_ED25519 = 0x04
ALG_COSIG_MLDSA44 = 0x06


class NoteError(ValueError):
    pass


def _key_hash(name: str, key: bytes) -> int:
    return struct.unpack(">I", hashlib.sha256(name.encode("utf-8") + b"\n" + key).digest()[:4])[0]


def _valid_name(name: str) -> bool:
    return bool(name) and "+" not in name and not any(c.isspace() for c in name)


def _b64(s: str) -> bytes:
    try:
        return base64.b64decode(s.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise NoteError("bad base64") from None


@dataclass
class Verifier:
    name: str
    key_hash: int
    _verify: object = field(repr=False)

    def verify(self, msg: bytes, sig: bytes) -> bool:
        return bool(self._verify(msg, sig))


def _split_vkey(vkey: str):
    parts = vkey.split("+", 2)
    if len(parts) != 3 or len(parts[1]) != 8 or not _valid_name(parts[0]):
        raise NoteError("malformed verifier key")
    try:
        h = int(parts[1], 16)
    except ValueError:
        raise NoteError("malformed verifier key hash") from None
    key = _b64(parts[2])
    if len(key) < 2:
        raise NoteError("malformed verifier key")
    return parts[0], h, key


def _ed25519(pub: bytes) -> Ed25519PublicKey:
    try:
        return Ed25519PublicKey.from_public_bytes(pub)
    except ValueError:
        raise NoteError("bad Ed25519 key") from None


def log_verifier(vkey: str) -> Verifier:
    """A signed-note Ed25519 verifier key (type 0x01): the log's checkpoint key."""
    name, h, key = _split_vkey(vkey)
    if key[0] != ALG_ED25519 or len(key) != 33:
        raise NoteError("not an Ed25519 note key")
    if _key_hash(name, key) != h:
        raise NoteError("verifier key hash does not match the key")
    pub = _ed25519(key[1:])

    def verify(msg: bytes, sig: bytes) -> bool:
        if len(sig) != 64:
            return False
        try:
            pub.verify(sig, msg)
            return True
        except InvalidSignature:
            return False

    return Verifier(name, h, verify)


def cosignature_verifier(vkey: str) -> Verifier:
    """A cosigner's key: 0x04 (or 0x01 read as 0x04) Ed25519, or 0x06 ML-DSA-44 (never verifies here)."""
    name, _, key = _split_vkey(vkey)
    if key[0] in (ALG_ED25519, ALG_COSIG_ED25519):
        if len(key) != 33:
            raise NoteError("bad Ed25519 cosigner key")
        pub = _ed25519(key[1:])

        def verify(msg: bytes, sig: bytes) -> bool:
            if len(sig) != 72:
                return False
            t = struct.unpack(">Q", sig[:8])[0]
            m = b"cosignature/v1\ntime %d\n" % t + msg
            try:
                pub.verify(sig[8:], m)
                return True
            except InvalidSignature:
                return False

        return Verifier(name, _key_hash(name, bytes([ALG_COSIG_ED25519]) + key[1:]), verify)
    if key[0] == ALG_COSIG_MLDSA44:
        return Verifier(name, _key_hash(name, key), lambda msg, sig: False)
    raise NoteError("not a cosignature/v1 verifier key")


@dataclass
class Signature:
    name: str
    key_hash: int
    sig: bytes  # without the key hash


def parse_note(text: bytes):
    """Splits a signed note into its body (up to and including the newline before the blank
    line) and its signature lines."""
    if isinstance(text, str):
        text = text.encode("utf-8")
    try:
        s = text.decode("utf-8")
    except UnicodeDecodeError:
        raise NoteError("note is not UTF-8") from None
    if not s.endswith("\n"):
        raise NoteError("note does not end in a newline")
    for c in s:
        if (ord(c) < 0x20 and c != "\n") or c == "\x7f":
            raise NoteError("note holds a control character")
    i = s.rfind("\n\n")
    if i < 0:
        raise NoteError("note has no signatures")
    body = s[:i + 1]
    sigs = []
    for line in s[i + 2:].split("\n")[:-1]:
        if not line.startswith("\u2014 "):
            raise NoteError("malformed signature line")
        rest = line[2:]
        name, sp, b64 = rest.partition(" ")
        if not sp or not _valid_name(name):
            raise NoteError("malformed signature line")
        raw = _b64(b64)
        if len(raw) < 5:
            raise NoteError("malformed signature")
        sigs.append(Signature(name, struct.unpack(">I", raw[:4])[0], raw[4:]))
    if not sigs:
        raise NoteError("note has no signatures")
    return body.encode("utf-8"), sigs


def open_note(text: bytes, verifiers):
    """Like note.Open: returns (body, verified signatures). Raises NoteError("invalid") when a
    signature by a known key does not verify, NoteError("unverified") when no known key signed."""
    body, sigs = parse_note(text)
    ok = []
    for s in sigs:
        for v in verifiers:
            if v.name == s.name and v.key_hash == s.key_hash:
                if not v.verify(body, s.sig):
                    raise NoteError("invalid signature")
                ok.append(s)
    if not ok:
        raise NoteError("unverified note")
    return body, ok


# ---- tlog-policy ---------------------------------------------------------------------------

_KEYWORDS = {"witness", "group", "any", "all", "none", "quorum", "log"}


@dataclass
class Policy:
    witnesses: list  # [(name, Verifier)]
    groups: list  # [(name, threshold, [members])]
    quorum: str

    def evaluate(self, checkpoint: bytes):
        """Returns (satisfied, cosigned names, invalid names), as tlogpolicy.Evaluate with no freshness bound."""
        counted, invalid = set(), []
        for name, v in self.witnesses:
            try:
                open_note(checkpoint, [v])
            except NoteError as e:
                if str(e) == "invalid signature":
                    invalid.append(name)
                continue
            counted.add(name)
        return self._satisfied(self.quorum, counted, 0), sorted(counted), sorted(invalid)

    def _satisfied(self, name: str, counted: set, depth: int) -> bool:
        if name == "none":
            return True
        if depth > len(self.groups) + 1:
            return False
        if name in counted:
            return True
        for g, k, members in self.groups:
            if g == name:
                return sum(1 for m in members if self._satisfied(m, counted, depth + 1)) >= k
        return False


def _check_url(s: str) -> None:
    rest = s[8:] if s.startswith("https://") else s[7:] if s.startswith("http://") else None
    if rest is None or not rest.split("/", 1)[0] or any(c in s for c in "\"<>\\^`{|}"):
        raise NoteError(f"{s[:80]!r} is not an http(s) URL")


def parse_policy(text) -> Policy:
    """Parses a tlog-policy file (the grammar and checks of tlogpolicy.Parse)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    if len(text.encode("utf-8")) > 1 << 20:
        raise NoteError("policy too large")
    names: set = set()
    witnesses, groups, quorum = [], [], None
    for no, line in enumerate(text.split("\n"), 1):
        line = line.split("#", 1)[0]
        f = line.split()
        if not f:
            continue

        def fail(msg):
            raise NoteError(f"tlog-policy: line {no}: {msg}")

        def check_name(n):
            if n in _KEYWORDS:
                fail(f"name {n!r} is a keyword")
            if n in names:
                fail(f"name {n!r} defined twice")

        if f[0] == "log":
            if not 2 <= len(f) <= 3:
                fail("want: log <vkey> [<url>]")
            try:
                _split_vkey(f[1])
            except NoteError as e:
                fail(f"log key: {e}")
            if len(f) == 3:
                _check_url(f[2])
        elif f[0] == "witness":
            if not 3 <= len(f) <= 4:
                fail("want: witness <name> <vkey> [<url>]")
            check_name(f[1])
            try:
                v = cosignature_verifier(f[2])
            except NoteError as e:
                fail(f"witness {f[1]!r}: {e}")
            if len(f) == 4:
                _check_url(f[3])
            names.add(f[1])
            witnesses.append((f[1], v))
        elif f[0] == "group":
            if len(f) < 4:
                fail("want: group <name> <k|any|all> <member>...")
            check_name(f[1])
            members = f[3:]
            if f[2] == "any":
                k = 1
            elif f[2] == "all":
                k = len(members)
            else:
                if not f[2].isdigit() or str(int(f[2])) != f[2] or not 1 <= int(f[2]) <= 255:
                    fail(f"group {f[1]!r}: threshold {f[2]!r} is not any, all or a number from 1")
                k = int(f[2])
            if k > len(members):
                fail(f"group {f[1]!r}: threshold {k} above its {len(members)} member(s)")
            if len(set(members)) != len(members):
                fail(f"group {f[1]!r}: a member listed twice")
            for m in members:
                if m not in names:
                    fail(f"group {f[1]!r}: member {m!r} is not defined above")
            names.add(f[1])
            groups.append((f[1], k, members))
        elif f[0] == "quorum":
            if len(f) != 2:
                fail("want: quorum <name|none>")
            if quorum is not None:
                fail("a second quorum line")
            if f[1] != "none" and f[1] not in names:
                fail(f"quorum {f[1]!r} is not defined above")
            quorum = f[1]
        else:
            fail(f"unknown keyword {f[0][:40]!r}")
    if quorum is None:
        raise NoteError("tlog-policy: no quorum line")
    return Policy(witnesses, groups, quorum)
