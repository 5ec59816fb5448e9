"""Drives the CHAP reference Python coordinator (packages/coordinator-py)
in-process through the journeys in journeys.plan.json and writes what it
returned. Usage: python3 journeys.py [--live] <chap-checkout> <plan.json> <out-dir>
Deterministic: fixed-seed Ed25519 keys, a fixed client clock, and the
coordinator's own deterministic_ids/deterministic_clock options.
--live: only the journeys marked "live" in the plan, run once the way a real
deployment runs: the coordinator's own clock and random ids (no deterministic
options), random Ed25519 seeds (recorded in keys.json), the client's ts and
envelope ids from the wall clock.
"""
from __future__ import annotations

import copy
import datetime as _dt
import hashlib
import json
import os
import sys
import time

argv = sys.argv[1:]
live = bool(argv) and argv[0] == "--live"
if live:
    argv = argv[1:]
if len(argv) != 3:
    sys.exit("usage: python3 journeys.py [--live] <chap-checkout> <plan.json> <out-dir>")
chap_dir, plan_path, out_dir = argv
sys.path.insert(0, os.path.join(os.path.abspath(chap_dir), "packages", "coordinator-py"))

from chap_coordinator.coordinator import Coordinator, CoordinatorOptions  # noqa: E402
from chap_coordinator.canonical import canonicalize  # noqa: E402
from chap_coordinator.crypto import sign, _b64url_nopad  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: E402

with open(plan_path, encoding="utf-8") as f:
    plan = json.load(f)
SEED_PREFIX = "evident/chap-reference/v1:"


def js(v) -> str:
    """JSON text as JavaScript's JSON.stringify writes it (compact, UTF-8)."""
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


# ---- keys -----------------------------------------------------------------
# Fixed seeds, or (live) fresh random seeds for every journey.
keys: dict[str, dict] = {}


def make_keys() -> None:
    keys.clear()
    for names in plan["keys"].values():
        for name in names:
            if live:
                seed = os.urandom(32)
            else:
                seed = hashlib.sha256((SEED_PREFIX + name).encode("utf-8")).digest()
            priv = Ed25519PrivateKey.from_private_bytes(seed)
            jwk = {"kty": "OKP", "crv": "Ed25519", "kid": name,
                   "x": _b64url_nopad(priv.public_key().public_bytes_raw()),
                   "use": "sig", "alg": "EdDSA"}
            keys[name] = {"seed_hex": seed.hex(), "priv": priv, "jwk": jwk}

# ---- client ids and clock -------------------------------------------------
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def enc(v: int, n: int) -> str:
    out = ""
    for _ in range(n):
        out = CROCKFORD[v & 31] + out
        v >>= 5
    return out


def client_ulid(ms: int, journey: str, n: int) -> str:
    r = hashlib.sha256(f"{journey}/{n}".encode("utf-8")).digest()[:10]
    return enc(ms, 10) + enc(int.from_bytes(r, "big"), 16)


def live_ulid(ms: int) -> str:
    return enc(ms, 10) + enc(int.from_bytes(os.urandom(10), "big"), 16)


def iso(ms: int) -> str:
    d = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}Z"


clock_start = int(_dt.datetime.strptime(plan["client_clock"]["start"], "%Y-%m-%dT%H:%M:%S.%fZ")
                  .replace(tzinfo=_dt.timezone.utc).timestamp() * 1000)
step_ms = plan["client_clock"]["step_ms"]


# ---- generated values -----------------------------------------------------
# {"$nest": {"depth": N, "key": K, "leaf": V}}: N nested objects {K: ...} (arrays
# [...] when K is null) around V. {"$text": {"bytes": N, "line": S}}: ASCII text
# of exactly N bytes, lines "<7-digit line number> S\n" repeated and cut at N.
def nest(spec, results):
    v = resolve_refs(spec.get("leaf"), results)
    for _ in range(spec["depth"]):
        v = [v] if spec["key"] is None else {spec["key"]: v}
    return v


def text(spec) -> str:
    line = spec["line"]
    if not all(0x20 <= ord(c) <= 0x7E for c in line):
        raise ValueError("$text line must be printable ASCII")
    parts, size, i = [], 0, 1
    while size < spec["bytes"]:
        part = f"{i:07d} {line}\n"
        parts.append(part)
        size += len(part)
        i += 1
    return "".join(parts)[:spec["bytes"]]


class deep_ok:
    """Lets the driver's own json.dumps/json.loads handle values nested deeper
    than the default recursion limit; dispatch always runs with the limit the
    coordinator would have (the interpreter's default)."""

    def __enter__(self):
        sys.setrecursionlimit(max(DEFAULT_RECURSION_LIMIT, 20000))

    def __exit__(self, *exc):
        sys.setrecursionlimit(DEFAULT_RECURSION_LIMIT)


DEFAULT_RECURSION_LIMIT = sys.getrecursionlimit()


# ---- refs -----------------------------------------------------------------
def resolve_refs(v, results):
    if isinstance(v, str):
        if v.startswith("$r:"):
            label, *path = v[3:].split(".")
            cur = results[label]
            for p in path:
                cur = cur[p]
            return cur
        if v.startswith("$jwk:"):
            return dict(keys[v[5:]]["jwk"])
        if v.startswith("$jwks:"):
            return {"keys": [dict(keys[v[6:]]["jwk"])]}
        if v.startswith("$kid:"):
            return keys[v[5:]]["jwk"]["kid"]
        return v
    if isinstance(v, list):
        return [resolve_refs(x, results) for x in v]
    if isinstance(v, dict):
        if list(v) == ["$nest"]:
            return nest(v["$nest"], results)
        if list(v) == ["$text"]:
            return text(v["$text"])
        return {k: resolve_refs(x, results) for k, x in v.items()}
    return v


def dump(path: str, v) -> None:
    with deep_ok(), open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(js(v) + "\n")


os.makedirs(out_dir, exist_ok=True)

for j in plan["journeys"]:
    if live and not j.get("live"):
        continue
    make_keys()
    if live:
        coord = Coordinator(CoordinatorOptions(require_signatures=True))
    else:
        coord = Coordinator(CoordinatorOptions(deterministic_ids=True, deterministic_clock=True,
                                               require_signatures=True))
    current = {alias: names[0] for alias, names in plan["keys"].items()}
    results: dict = {}
    lines: list[str] = []
    used: set[str] = set()
    n = 0

    def send(step: dict) -> dict:
        global n
        n += 1
        alias = step["as"]
        who = plan["participants"][alias]
        used.add(alias)
        ms = time.time_ns() // 1_000_000 if live else clock_start + n * step_ms
        ts = step.get("ts") or iso(ms)
        given = resolve_refs(step.get("params") or {}, results)
        params = {"workspace": j["workspace"], "from": who["uri"]}
        if "to" in given:
            params["to"] = given["to"]
        params["ts"] = ts
        for k, v in given.items():
            if k != "to":
                params[k] = v
        env = {"jsonrpc": "2.0", "id": live_ulid(ms) if live else client_ulid(ms, j["name"], n),
               "method": step["method"], "params": params}
        key_name = step.get("key") or current[alias]
        if step.get("sign") != "none":
            k = keys[key_name]
            with deep_ok():
                env["sig"] = sign(canonicalize(env), k["priv"], k["jwk"]["kid"])
        if step.get("sign") == "tamper":
            env["params"].update(step["tamper"])
        with deep_ok():
            sent = js(env)  # bytes as sent, before the coordinator can touch the object
            request = json.loads(sent)
        try:
            reply = coord.dispatch(request)
        except Exception as exc:  # not a JSON-RPC answer: dispatch itself raised (recorded as such)
            reply = {"thrown": f"{type(exc).__name__}: {exc}"}
        accepted = "error" not in reply and "thrown" not in reply
        if accepted and step.get("label"):
            results[step["label"]] = copy.deepcopy(reply.get("result"))
        if accepted and step.get("then_current"):
            current[alias] = step["then_current"]
        # expect: "ok", "error", "thrown", or {"ts": ..., "py": ...} when the two differ.
        expect = step.get("expect", "ok")
        if isinstance(expect, dict):
            expect = expect["py"]
        if (expect == "ok") != accepted or (expect == "thrown") != ("thrown" in reply):
            print(f"[py {j['name']} #{n}] {step['method']}: expected {expect}, got {js(reply)}",
                  file=sys.stderr)
        meta = {"step": n, "method": step["method"], "as": who["uri"],
                "key": None if step.get("sign") == "none" else key_name}
        if step.get("note"):
            meta["note"] = step["note"]
        meta["expect"] = expect
        meta["accepted"] = accepted
        with deep_ok():
            lines.append(js(meta)[:-1] + ',"envelope":' + sent + ',"response":' + js(reply) + "}")
        return reply

    for step in j["steps"]:
        send(step)
    reader = j["reader"]
    audit = send({"method": "audit.read", "as": reader, "note": "final read: whole audit log"})
    describe = send({"method": "workspace.describe", "as": reader, "note": "final read"})
    verify = send({"method": "audit.verify_chain", "as": reader, "note": "final read"})

    name = j["name"]
    with open(os.path.join(out_dir, f"{name}.requests.jsonl"), "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    dump(os.path.join(out_dir, f"{name}.audit.json"), audit["result"])
    with deep_ok(), open(os.path.join(out_dir, f"{name}.audit.jsonl"), "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(js(e) + "\n" for e in audit["result"]["entries"]))
    dump(os.path.join(out_dir, f"{name}.describe.json"), describe["result"])
    dump(os.path.join(out_dir, f"{name}.verify_chain.json"),
         verify["result"] if "error" not in verify else {"error": verify["error"]})

    parts = {}
    for alias, p in plan["participants"].items():
        if alias not in used:
            continue
        parts[alias] = {
            "uri": p["uri"], "type": p["type"], "current_key": current[alias],
            "keys": [{"name": nm, "kid": keys[nm]["jwk"]["kid"], "seed_hex": keys[nm]["seed_hex"],
                      "jwk": keys[nm]["jwk"]} for nm in plan["keys"][alias]],
        }
    with open(os.path.join(out_dir, f"{name}.keys.json"), "w", encoding="utf-8", newline="\n") as f:
        f.write(json.dumps({
            "workspace": j["workspace"],
            "seed_derivation": ("random: 32 bytes from os.urandom when the journey was recorded (seed_hex below)"
                                if live else plan["seed_derivation"]),
            "signing": "sig = \"ed25519:\" + kid + \":\" + base64(Ed25519(seed, JCS(envelope without sig)))",
            "participants": parts,
        }, indent=2, ensure_ascii=False) + "\n")
