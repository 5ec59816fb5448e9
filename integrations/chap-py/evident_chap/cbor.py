"""A strict reader of the CBOR Evident writes (RFC 8949), beside cbor2.

cbor2 decodes values but accepts duplicate map keys (the last wins) and does not
give the raw bytes of each item, which a verifier needs: a COSE signature covers
the protected header's bytes as sent, and a log entry is the statement with one
item replaced and the others kept byte for byte. This reader refuses indefinite
lengths, duplicate keys and trailing bytes, and returns item boundaries.
"""
from __future__ import annotations

from typing import Any

__all__ = ["CBORError", "Tag", "decode", "item_end", "split_sign1"]


class CBORError(ValueError):
    pass


class Tag:
    __slots__ = ("tag", "value")

    def __init__(self, tag: int, value: Any):
        self.tag, self.value = tag, value

    def __eq__(self, o: object) -> bool:
        return isinstance(o, Tag) and o.tag == self.tag and o.value == self.value

    def __hash__(self) -> int:
        return hash(("tag", self.tag))

    def __repr__(self) -> str:
        return f"Tag({self.tag}, {self.value!r})"


_MAX_DEPTH = 32


def _head(b: bytes, i: int):
    if i >= len(b):
        raise CBORError("truncated")
    ib = b[i]
    major, ai = ib >> 5, ib & 0x1F
    i += 1
    if ai < 24:
        return major, ai, i
    if ai == 31:
        raise CBORError("indefinite length")
    if ai > 27:
        raise CBORError("reserved additional information")
    n = 1 << (ai - 24)
    if i + n > len(b):
        raise CBORError("truncated")
    return major, int.from_bytes(b[i:i + n], "big"), i + n


def _item(b: bytes, i: int, depth: int, want_value: bool):
    if depth > _MAX_DEPTH:
        raise CBORError("nested too deep")
    major, arg, i = _head(b, i)
    if major == 0:
        return arg, i
    if major == 1:
        return -1 - arg, i
    if major in (2, 3):
        end = i + arg
        if end > len(b):
            raise CBORError("truncated string")
        raw = b[i:end]
        if major == 3:
            try:
                return raw.decode("utf-8"), end
            except UnicodeDecodeError:
                raise CBORError("invalid UTF-8 text") from None
        return bytes(raw), end
    if major == 4:
        out = []
        for _ in range(arg):
            v, i = _item(b, i, depth + 1, want_value)
            out.append(v)
        return out, i
    if major == 5:
        m: dict = {}
        raw_keys = set()
        for _ in range(arg):
            ks = i
            k, i = _item(b, i, depth + 1, want_value)
            rk = bytes(b[ks:i])
            if rk in raw_keys:
                raise CBORError("duplicate map key")
            raw_keys.add(rk)
            v, i = _item(b, i, depth + 1, want_value)
            if isinstance(k, (list, dict)):
                k = ("unhashable", rk)
            m[k] = v
        return m, i
    if major == 6:
        v, i = _item(b, i, depth + 1, want_value)
        return Tag(arg, v), i
    # major 7
    if arg == 20:
        return False, i
    if arg == 21:
        return True, i
    if arg == 22:
        return None, i
    if arg == 23:
        return Ellipsis, i  # undefined
    raise CBORError("floats and simple values are not used here")


def decode(b: bytes) -> Any:
    """Decodes exactly one item; refuses trailing bytes."""
    v, i = _item(bytes(b), 0, 0, True)
    if i != len(b):
        raise CBORError("bytes after the item")
    return v


def item_end(b: bytes, i: int) -> int:
    """Returns the offset just past the item starting at i."""
    _, j = _item(b, i, 0, False)
    return j


def split_sign1(raw: bytes):
    """Splits a tagged COSE_Sign1 (tag 18, array of 4) into the raw bytes of its four items."""
    raw = bytes(raw)
    if len(raw) < 2 or raw[0] != 0xD2 or raw[1] != 0x84:
        raise CBORError("not a tagged COSE_Sign1 of 4 items")
    i = 2
    parts = []
    for _ in range(4):
        j = item_end(raw, i)
        parts.append(raw[i:j])
        i = j
    if i != len(raw):
        raise CBORError("bytes after the COSE_Sign1")
    return parts
