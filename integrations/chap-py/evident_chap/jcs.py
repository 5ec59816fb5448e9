"""RFC 8785 JSON Canonicalization Scheme (JCS).

Object keys are sorted by their UTF-16 code units, strings are written with the
minimal JSON escapes (no ASCII escaping), integers as decimal digits and floats
in the ECMAScript Number-to-String form RFC 8785 requires.
"""
from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

__all__ = ["canonicalize", "format_number"]

_str = json.encoder.encode_basestring  # ensure_ascii off: escapes only ", \ and C0 controls


def format_number(x: Any) -> str:
    """Formats an int or float as ECMAScript's Number.prototype.toString does."""
    if isinstance(x, bool):
        raise TypeError("bool is not a number")
    if isinstance(x, int):
        return str(x)
    if not isinstance(x, float):
        raise TypeError(f"not a number: {type(x)!r}")
    if x != x or x in (float("inf"), float("-inf")):
        raise ValueError("JCS: NaN and infinities are not JSON")
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    # repr gives the shortest digit string that round-trips, as ECMAScript does.
    t = Decimal(repr(abs(x))).as_tuple()
    digits = "".join(str(d) for d in t.digits).rstrip("0") or "0"
    trailing = len(t.digits) - len("".join(str(d) for d in t.digits).rstrip("0"))
    k = len(digits)
    n = t.exponent + trailing + k  # x = 0.digits × 10^n
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        es = ("+" if e > 0 else "-") + str(abs(e))
        out = digits + "e" + es if k == 1 else digits[0] + "." + digits[1:] + "e" + es
    return sign + out


def _sortkey(k: str) -> bytes:
    return k.encode("utf-16-be", "surrogatepass")


def _canon(v: Any, out: list) -> None:
    # Iterative: CHAP values may nest deeper than Python's recursion limit.
    stack = [v]
    push, pop, emit = stack.append, stack.pop, out.append
    while stack:
        v = pop()
        if v.__class__ is _Lit:
            emit(v.s)
        elif v is None:
            emit("null")
        elif v is True:
            emit("true")
        elif v is False:
            emit("false")
        elif isinstance(v, str):
            emit(_str(v))
        elif isinstance(v, (int, float)):
            emit(format_number(v))
        elif isinstance(v, dict):
            for k in v:
                if not isinstance(k, str):
                    raise TypeError("JCS: object keys must be strings")
            keys = sorted(v, key=_sortkey)
            emit("{")
            push(_CLOSE_OBJ)
            for i in range(len(keys) - 1, -1, -1):
                k = keys[i]
                push(v[k])
                push(_Lit(("," if i else "") + _str(k) + ":"))
        elif isinstance(v, (list, tuple)):
            emit("[")
            push(_CLOSE_ARR)
            for i in range(len(v) - 1, -1, -1):
                push(v[i])
                if i:
                    push(_COMMA)
        else:
            raise TypeError(f"JCS: cannot canonicalize {type(v)!r}")


class _Lit:
    __slots__ = ("s",)

    def __init__(self, s: str):
        self.s = s


_CLOSE_OBJ, _CLOSE_ARR, _COMMA = _Lit("}"), _Lit("]"), _Lit(",")


def canonicalize(v: Any) -> bytes:
    """Returns the JCS bytes (UTF-8) of a JSON value."""
    out: list = []
    _canon(v, out)
    # A lone surrogate cannot be encoded: such a string is not canonical JSON.
    return "".join(out).encode("utf-8")
