"""Runs a CHAP reference Coordinator (TypeScript or Python, 0.2.10) wired to Evident
through the adapters of integrations/, under an evidentd outage and a Coordinator crash,
checks what evidentd holds against what the Coordinator says, and keeps what they emitted.

  python3 anchored.py host  <chap-checkout> <options-json>     the Python child host
  python3 anchored.py drive --coordinator ts|py --chap DIR --bin DIR --work DIR --out DIR
                            [--tsx-loader FILE] [--workspaces 2] [--rounds 10] [--rate 25]
                            [--outage 30] [--bench-runs 30]

`host` runs chap_coordinator's Coordinator (enable_chain, require_signatures, a SqliteStore
or no store, the adapter's three hooks or none) and answers JSON lines on stdin with JSON
lines on stdout, exactly as anchored.ts does for the TypeScript Coordinator (see there).

`drive` is the parent: it starts evidentd (loopback, port 0), starts the host as a child
process, sends it signed calls built from the `profiles` journey of
../chap-reference/journeys.plan.json (the journey that crosses every profile: routing,
modes, whisper, review, handoff, deliberation, control, security-signed, audit-scitt),
repeated round after round in a few workspaces; kills evidentd (SIGKILL) for --outage
seconds while the calls go on and restarts it on the same data directory and port; later
kills the child (SIGKILL) while a burst of calls is in flight and restarts it on the same
store and spool; then flushes, compares evidentd's chains with audit.read page by page,
compares heads, submits every entry with audit.submit_to_scitt, verifies every receipt with
audit.verify_receipt (and three tampered ones), measures the hook's cost on dispatch and the
lag to evidentd, and writes the vectors to --out.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import queue
import random
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

CHILDREN: list = []  # every process this driver started, killed (by its own pid) on any exit


def _cleanup(*_a) -> None:
    for p in CHILDREN:
        if p.poll() is None:
            p.kill()


HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
PLAN = os.path.join(HERE, "..", "chap-reference", "journeys.plan.json")
SEED_PREFIX = "evident/chap-anchored/v1:"


def js(v) -> str:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


# =====================================================================================
#   host: the Python Coordinator in a child process
# =====================================================================================
def cmd_host(chap: str, opts_json: str) -> None:
    sys.path.insert(0, os.path.join(os.path.abspath(chap), "packages", "coordinator-py"))
    from chap_coordinator.coordinator import Coordinator, CoordinatorOptions
    opts = json.loads(opts_json)
    kw: dict = {"enable_chain": True, "require_signatures": True}
    if opts["store"] != "memory":
        from chap_coordinator.storage.sqlite import SqliteStore
        kw["store"] = SqliteStore(opts["store"]["sqlite"])
    hooks = None
    if opts.get("evident"):
        for p in ("integrations/chap-py/src", "integrations/chap-py"):
            sys.path.insert(0, os.path.join(REPO, p))
        from evident_chap import evident_hooks
        ev = opts["evident"]
        hooks = evident_hooks(url=ev["url"], trust=ev["trust"], spool_dir=ev["spoolDir"])
        if "store" in kw:  # entries ship once the Coordinator's store saved them
            kw["store"] = hooks.wrap_store(kw["store"])
        kw.update(on_audit=hooks.on_audit, scitt_submitter=hooks.scitt_submitter,
                  verify_scitt_receipt=hooks.verify_scitt_receipt)
    coord = Coordinator(CoordinatorOptions(**kw))
    startup_restored = len(coord.workspaces)
    if hooks is not None:
        hooks.attach(coord)  # the Python adapter reads the Coordinator's log for gap fills
    out = sys.stdout

    def emit(v) -> None:
        out.write(js(v) + "\n")
        out.flush()

    while True:
        line = sys.stdin.readline()
        if not line:
            break
        if not line.strip():
            continue
        msg = json.loads(line)
        if "$ctl" in msg:
            c = msg["$ctl"]
            t0 = time.perf_counter()
            if c in ("flush", "close"):
                ok, err = True, None
                try:
                    if hooks is not None:
                        (hooks.flush if c == "flush" else hooks.close)()
                except Exception as e:  # noqa: BLE001
                    ok, err = False, f"{type(e).__name__}: {e}"
                emit({"ctl": c, "ok": ok, "err": err, "ms": (time.perf_counter() - t0) * 1000})
                if c == "close":
                    break
            elif c == "startup":
                emit({"ctl": c, "store_records": len(kw["store"].load()) if "store" in kw else 0,
                      "restored_by_constructor": startup_restored, "restored_by_host": None})
            elif c == "audit_len":
                ws = coord.workspaces.get(msg["ws"])
                emit({"ctl": c, "ws": msg["ws"], "len": None if ws is None else len(ws.audit),
                      "head": None if ws is None else ws.chain_head})
            else:
                emit({"ctl": c, "ok": False, "err": "unknown control"})
            continue
        ws_id = (msg.get("params") or {}).get("workspace")
        ws = coord.workspaces.get(ws_id) if isinstance(ws_id, str) else None
        before = len(ws.audit) if ws is not None else 0
        t0 = time.perf_counter_ns()
        try:
            r = coord.dispatch(msg)
        except Exception as e:  # noqa: BLE001
            r = {"thrown": f"{type(e).__name__}: {e}"}
        t1 = time.perf_counter_ns()
        t = time.time_ns() // 1_000_000
        ws = coord.workspaces.get(ws_id) if isinstance(ws_id, str) else None
        after = len(ws.audit) if ws is not None else 0
        emit({"r": r, "us": (t1 - t0) / 1000, "t": t, "ws": ws_id,
              "seq": after - 1 if after > before else None})
    sys.exit(0)


# =====================================================================================
#   drive: the parent
# =====================================================================================
class Host:
    """A coordinator child process speaking JSON lines."""

    def __init__(self, argv: list[str], stderr_path: str):
        self.err = open(stderr_path, "ab")
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.err, bufsize=0)
        CHILDREN.append(self.p)
        self.q: queue.Queue = queue.Queue()
        self.t = threading.Thread(target=self._reader, daemon=True)
        self.t.start()

    def _reader(self) -> None:
        f = self.p.stdout
        buf = b""
        while True:
            chunk = f.read1(1 << 20) if hasattr(f, "read1") else os.read(f.fileno(), 1 << 20)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if line.strip():
                    self.q.put(json.loads(line))
        self.q.put(None)

    def write(self, s: str) -> None:
        self.p.stdin.write(s.encode("utf-8") + b"\n")

    def read(self, timeout: float = 120.0):
        return self.q.get(timeout=timeout)

    def call(self, env_text: str, timeout: float = 120.0):
        self.write(env_text)
        return self.read(timeout)

    def ctl(self, c: str, timeout: float = 120.0, **kw):
        self.write(js({"$ctl": c, **kw}))
        return self.read(timeout)

    def kill(self) -> None:
        self.p.kill()
        self.p.wait()

    def close(self, timeout: float = 60.0):
        try:
            r = self.ctl("close", timeout=timeout)
        except Exception:  # noqa: BLE001
            r = None
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        return r


class Evidentd:
    def __init__(self, binary: str, data: str, log: str):
        self.binary, self.data, self.log = binary, data, log
        self.p = None
        self.listen = "127.0.0.1:0"
        self.url = None

    def start(self) -> None:
        logf = open(self.log, "ab")
        start_size = os.path.getsize(self.log)
        self.p = subprocess.Popen([self.binary, "-data", self.data, "-listen", self.listen,
                                   "-checkpoint-interval", "200ms"],
                                  stdout=logf, stderr=logf)
        CHILDREN.append(self.p)
        deadline = time.time() + 30
        while time.time() < deadline:
            with open(self.log, "rb") as f:
                f.seek(start_size)
                m = re.search(rb'msg="evidentd listening" addr=(http://[0-9.:]+)', f.read())
            if m:
                self.url = m.group(1).decode()
                self.listen = self.url[len("http://"):]  # a restart takes the same port
                return
            if self.p.poll() is not None:
                raise RuntimeError("evidentd exited at start")
            time.sleep(0.05)
        raise RuntimeError("evidentd did not start")

    def kill(self) -> None:
        self.p.send_signal(signal.SIGKILL)
        self.p.wait()

    def stop(self) -> None:
        self.p.terminate()
        try:
            self.p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def http_json(url: str, timeout: float = 10.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


def pct(xs: list[float], p: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = min(len(s) - 1, max(0, int(round(p / 100 * (len(s) - 1)))))
    return s[k]


def summary(xs: list[float], nd: int = 1) -> dict:
    if not xs:
        return {"n": 0}
    return {"n": len(xs), "median": round(statistics.median(xs), nd), "p90": round(pct(xs, 90), nd),
            "p99": round(pct(xs, 99), nd), "max": round(max(xs), nd), "mean": round(statistics.fmean(xs), nd)}


class Poller(threading.Thread):
    """Polls evidentd's chain sizes; keeps (epoch ms, size) whenever a size changes."""

    def __init__(self, ev: Evidentd, chains: list[str], interval: float = 0.01):
        super().__init__(daemon=True)
        self.ev, self.chains, self.interval = ev, chains, interval
        self.seen: dict[str, list[tuple[int, int]]] = {c: [] for c in chains}
        self.errors = 0
        self.stopping = False

    def run(self) -> None:
        while not self.stopping:
            for c in self.chains:
                try:
                    size = http_json(f"{self.ev.url}/v1/chains/{c}", timeout=2)["size"]
                except urllib.error.HTTPError as e:
                    size = 0 if e.code == 404 else None
                except Exception:  # noqa: BLE001
                    size = None
                t = time.time_ns() // 1_000_000
                if size is None:
                    self.errors += 1
                    continue
                s = self.seen[c]
                if not s or s[-1][1] != size:
                    s.append((t, size))
            time.sleep(self.interval)

    def acked_at(self, chain: str, seq: int):
        for t, size in self.seen[chain]:
            if size > seq:
                return t
        return None


class Workload:
    def __init__(self, coordinator: str, n_ws: int, rounds: int):
        sys_path = os.path.join(ARGS.chap, "packages", "coordinator-py")
        sys.path.insert(0, sys_path)
        from chap_coordinator.canonical import canonicalize
        from chap_coordinator.crypto import sign, _b64url_nopad
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
        self.canonicalize, self.sign = canonicalize, sign
        with open(PLAN, encoding="utf-8") as f:
            self.plan = json.load(f)
        j = next(j for j in self.plan["journeys"] if j["name"] == "profiles")
        self.journey_ws = j["workspace"]
        self.setup, self.body = j["steps"][:7], j["steps"][7:]
        assert all(s["method"] in ("workspace.create", "participant.join") for s in self.setup)
        self.keys = {}
        for names in self.plan["keys"].values():
            for name in names:
                seed = hashlib.sha256((SEED_PREFIX + name).encode()).digest()
                priv = Ed25519PrivateKey.from_private_bytes(seed)
                jwk = {"kty": "OKP", "crv": "Ed25519", "kid": name,
                       "x": _b64url_nopad(priv.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)), "use": "sig", "alg": "EdDSA"}
                self.keys[name] = {"priv": priv, "jwk": jwk}
        self.workspaces = [f"wsp_anchored_{coordinator}_{i + 1}" for i in range(n_ws)]
        self.current = {w: {a: n[0] for a, n in self.plan["keys"].items()} for w in self.workspaces}
        self.results: dict[tuple, dict] = {}
        items = [(w, 0, s) for w in self.workspaces for s in self.setup]
        for r in range(rounds):
            w = self.workspaces[r % n_ws]
            items += [(w, r, s) for s in self.body]
        self.items = items
        self.n = 0

    def _subst(self, step: dict, ws: str, rnd: int) -> dict:
        t = json.dumps(step).replace(self.journey_ws, ws).replace(
            "dlb_chosen_by_the_client", f"dlb_client_{ws}_r{rnd}")
        return json.loads(t)

    def resolve(self, v, res):
        if isinstance(v, str):
            if v.startswith("$r:"):
                label, *path = v[3:].split(".")
                cur = res[label]
                for p in path:
                    cur = cur[p]
                return cur
            if v.startswith("$jwks:"):
                return {"keys": [dict(self.keys[v[6:]]["jwk"])]}
            if v.startswith("$jwk:"):
                return dict(self.keys[v[5:]]["jwk"])
            if v.startswith("$kid:"):
                return self.keys[v[5:]]["jwk"]["kid"]
            return v
        if isinstance(v, list):
            return [self.resolve(x, res) for x in v]
        if isinstance(v, dict):
            return {k: self.resolve(x, res) for k, x in v.items()}
        return v

    def envelope(self, ws: str, rnd: int, step: dict) -> tuple[str, dict]:
        step = self._subst(step, ws, rnd)
        res = self.results.setdefault((ws, rnd), {})
        who = self.plan["participants"][step["as"]]
        ms = time.time_ns() // 1_000_000
        given = self.resolve(step.get("params") or {}, res)
        params = {"workspace": ws, "from": who["uri"]}
        if "to" in given:
            params["to"] = given["to"]
        params["ts"] = iso(ms)
        for k, v in given.items():
            if k != "to":
                params[k] = v
        env = {"jsonrpc": "2.0", "id": ulid(ms), "method": step["method"], "params": params}
        k = self.keys[self.current[ws][step["as"]]]
        env["sig"] = self.sign(self.canonicalize(env), k["priv"], k["jwk"]["kid"])
        return js(env), step

    def signed(self, ws: str, method: str, params: dict, who: str = "alice") -> str:
        return self.envelope(ws, -1, {"method": method, "as": who, "params": params})[0]

    def took(self, ws: str, rnd: int, step: dict, reply: dict) -> bool:
        r = reply.get("r") or {}
        ok = "error" not in r and "thrown" not in r
        if ok and step.get("label"):
            self.results[(ws, rnd)][step["label"]] = r.get("result")
        if ok and step.get("then_current"):
            self.current[ws][step["as"]] = step["then_current"]
        expect = step.get("expect", "ok")
        if isinstance(expect, dict):
            expect = expect[ARGS.coordinator]
        return (expect == "ok") == ok


CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def ulid(ms: int) -> str:
    def enc(v: int, n: int) -> str:
        s = ""
        for _ in range(n):
            s = CROCKFORD[v & 31] + s
            v >>= 5
        return s
    return enc(ms, 10) + enc(int.from_bytes(os.urandom(10), "big"), 16)


def iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


def host_argv(opts: dict) -> list[str]:
    if ARGS.coordinator == "ts":
        return ["node", "--import", "file://" + os.path.abspath(ARGS.tsx_loader),
                os.path.join(HERE, "anchored.ts"), ARGS.chap, js(opts)]
    return [sys.executable, os.path.join(HERE, "anchored.py"), "host", ARGS.chap, js(opts)]


def store_opt(work: str):
    if ARGS.coordinator == "ts":
        return {"json": os.path.join(work, "store")}
    return {"sqlite": os.path.join(work, "store.sqlite")}


def tamper(receipt: dict, member: str, frac: float = 0.5) -> tuple[dict, dict]:
    t = dict(receipt)
    if member == "checkpoint":
        s = t[member]
        i = len(s.split("\n")[0]) + 3  # a digit of the tree size line
        c = s[i]
        t[member] = s[:i] + ("1" if c != "1" else "2") + s[i + 1:]
        return t, {"member": member, "char_index": i, "was": c, "now": t[member][i]}
    raw = bytearray(base64.b64decode(t[member]))
    i = int(len(raw) * frac)
    raw[i] ^= 0x01
    t[member] = base64.b64encode(bytes(raw)).decode()
    return t, {"member": member, "byte_index": i, "xor": 1}


def cmd_drive() -> None:
    a = ARGS
    out = a.out
    work = a.work
    os.makedirs(out, exist_ok=True)
    os.makedirs(work, exist_ok=True)
    run: dict = {"coordinator": a.coordinator, "parameters": {
        "workspaces": a.workspaces, "rounds": a.rounds, "rate_per_s": a.rate, "outage_s": a.outage,
        "crash_burst": a.burst, "crash_after_answers": a.kill_after, "crash_at": a.crash_at,
        "kill_delay_ms": a.kill_delay_ms, "bench_runs": a.bench_runs,
        "journey": "profiles (../chap-reference/journeys.plan.json): 7 setup steps per workspace, then "
                   "its remaining steps as one round, rounds going to the workspaces in turn"}}
    t_start = time.time()
    rel = lambda t: round(t - t_start, 3)  # noqa: E731

    ev = Evidentd(os.path.join(a.bin, "evidentd"), os.path.join(work, "evident-data"),
                  os.path.join(work, "evidentd.log"))
    ev.start()
    wl_url[0] = ev.url
    trust = http_json(f"{ev.url}/.well-known/evident-trust")
    trust_path = os.path.join(work, "trust.json")
    with open(trust_path, "w") as f:
        f.write(json.dumps(trust, indent=2) + "\n")
    with open(os.path.join(out, "trust.json"), "w") as f:
        f.write(json.dumps(trust, indent=2) + "\n")

    wl = Workload(a.coordinator, a.workspaces, a.rounds)
    opts = {"store": store_opt(work),
            "evident": {"url": ev.url, "trust": trust_path, "spoolDir": os.path.join(work, "spool")}}
    host = Host(host_argv(opts), os.path.join(work, "host.stderr"))
    poller = Poller(ev, wl.workspaces)
    poller.start()

    N = len(wl.items)
    k_out = int(N * a.outage_at)
    crash_points = {int(N * float(x)): (n, float(d)) for n, (x, d) in
                    enumerate(zip(a.crash_at.split(","), a.kill_delay_ms.split(",")))}
    k_crash = min(crash_points)
    counts = {"calls": 0, "accepted": 0, "refused": 0, "unexpected": 0}
    unexpected: list = []
    ret: dict[tuple[str, int], int] = {}  # (ws, seq) -> epoch ms dispatch returned
    dispatch_us: list[float] = []
    outage: dict = {}
    crashes: list = []
    t0 = time.time()
    last_send = 0.0
    i = 0
    sent_during_outage = 0

    def one(ws, rnd, step):
        nonlocal host
        text, st = wl.envelope(ws, rnd, step)
        reply = host.call(text)
        counts["calls"] += 1
        r = reply["r"]
        if "error" in r or "thrown" in r:
            counts["refused"] += 1
        else:
            counts["accepted"] += 1
        if not wl.took(ws, rnd, st, reply):
            counts["unexpected"] += 1
            unexpected.append({"ws": ws, "round": rnd, "method": st["method"], "reply": r})
        if reply.get("seq") is not None:
            ret[(ws, reply["seq"])] = reply["t"]
        dispatch_us.append(reply["us"])
        return reply

    while i < N:
        # pace
        due = last_send + 1 / a.rate  # no catching up: at most `rate` calls a second
        now = time.time()
        if due > now:
            time.sleep(due - now)
        last_send = time.time()
        if i == k_out:
            ev.kill()
            outage["down_at_s"] = rel(time.time())
            outage["down_at_call"] = i
            outage["chain_sizes_at_kill"] = {w: (poller.seen[w][-1][1] if poller.seen[w] else 0)
                                             for w in wl.workspaces}
            t_down = time.time()
        if i in crash_points and "down_at_s" in outage and "up_at_s" not in outage:
            time.sleep(max(0.0, t_down + a.outage - time.time()))  # the crash comes after the outage
        if "down_at_s" in outage and "up_at_s" not in outage:
            if time.time() - t_down >= a.outage:
                ev.start()
                outage["up_at_s"] = rel(time.time())
                outage["up_at_call"] = i
                outage["down_for_s"] = round(time.time() - t_down, 3)
                outage["calls_while_down"] = sent_during_outage
            else:
                sent_during_outage += 1
        if i in crash_points:
            n_, delay = crash_points[i]
            crash = do_crash(host, wl, rel, wl.workspaces[n_ % len(wl.workspaces)], delay)
            host = crash.pop("_host")
            for (w, s), t in crash.pop("_ret").items():
                ret[(w, s)] = t
            crash["at_call"] = i
            crashes.append(crash)
        ws, rnd, step = wl.items[i]
        one(ws, rnd, step)
        i += 1
    run["workload"] = {"duration_s": round(time.time() - t0, 3), **counts,
                       "unexpected_answers": unexpected[:20]}
    run["outage"] = outage
    run["crashes"] = crashes

    # ---- flush, submit, flush -------------------------------------------------------
    f1 = host.ctl("flush", timeout=300)
    run["flush_after_workload"] = {"ok": f1["ok"], "err": f1.get("err"), "ms": round(f1["ms"], 1)}
    receipts: dict[str, list] = {}
    submit = {}
    for w in wl.workspaces:
        n_ = host.ctl("audit_len", ws=w)["len"]
        ts = time.time()
        rep = host.call(wl.signed(w, "audit.submit_to_scitt", {"range": {"from_seq": 0, "to_seq": n_}}), timeout=600)
        dt = time.time() - ts
        r = rep["r"]
        if "result" in r:
            receipts[w] = r["result"]["receipts"]
            submit[w] = {"range": [0, n_], "receipts": len(receipts[w]), "seconds": round(dt, 3),
                         "every_seq": [x["seq"] for x in receipts[w]] == list(range(n_)),
                         "null_receipts": sum(1 for x in receipts[w] if not x.get("receipt"))}
        else:
            receipts[w] = []
            submit[w] = {"range": [0, n_], "error": r.get("error") or r.get("thrown"), "seconds": round(dt, 3)}
        if rep.get("seq") is not None:
            ret[(w, rep["seq"])] = rep["t"]
    run["submit_to_scitt"] = submit
    f2 = host.ctl("flush", timeout=300)
    run["flush_after_submit"] = {"ok": f2["ok"], "err": f2.get("err"), "ms": round(f2["ms"], 1)}
    time.sleep(0.3)
    poller.stopping = True
    poller.join()

    # ---- compare evidentd with audit.read ---------------------------------------------
    compare = {}
    audits, describes = {}, {}
    for w in wl.workspaces:
        ar = host.call(wl.signed(w, "audit.read", {}), timeout=120)["r"]
        entries = ar["result"]["entries"]
        audits[w] = entries
        d = host.call(wl.signed(w, "workspace.describe", {}))["r"]["result"]
        describes[w] = d
        vc = host.call(wl.signed(w, "audit.verify_chain", {}))["r"]
        compare[w] = compare_chain(ev.url, w, entries, d, wl)
        compare[w]["verify_chain"] = vc.get("result", vc.get("error"))
    run["compare"] = compare

    # ---- verify receipts -----------------------------------------------------------------
    verify = {"verified_true": 0, "verified_other": [], "tampered": []}
    per_seq = []
    for w in wl.workspaces:
        for x in receipts[w]:
            r = host.call(wl.signed(w, "audit.verify_receipt", {"receipt": x["receipt"]}))["r"]
            ok = r.get("result", {}).get("verified") is True
            per_seq.append({"workspace": w, "seq": x["seq"], "answer": r.get("result", r.get("error"))})
            if ok:
                verify["verified_true"] += 1
            else:
                verify["verified_other"].append({"workspace": w, "seq": x["seq"], "answer": r})
    sample_w = wl.workspaces[0]
    sample = receipts[sample_w][len(receipts[sample_w]) // 2] if receipts[sample_w] else None
    if sample:
        for member, frac in (("statement", 0.5), ("statement", 0.25), ("seal", 0.5), ("seal", 0.25),
                             ("seal", 0.9), ("checkpoint", 0)):
            t, how = tamper(sample["receipt"], member, frac)
            r = host.call(wl.signed(sample_w, "audit.verify_receipt", {"receipt": t}))["r"]
            verify["tampered"].append({"workspace": sample_w, "seq": sample["seq"], **how,
                                       "answer": r.get("result", r.get("error")),
                                       "refused_with_32082": r.get("error", {}).get("code") == -32082})
    verify["receipts"] = sum(len(v) for v in receipts.values())
    run["verify_receipt"] = {k: v for k, v in verify.items()}
    run["go_cli"] = go_cli_check(a, receipts, trust_path, work)

    # ---- lag --------------------------------------------------------------------------------
    lag_normal, lag_outage, lag_crash = [], [], []
    t_down_ms = (t_start + outage["down_at_s"]) * 1000
    t_up_ms = (t_start + outage["up_at_s"]) * 1000
    cr_windows = [((t_start + c["killed_at_s"]) * 1000 - 1000, (t_start + c["restarted_at_s"]) * 1000 + 2000)
                  for c in crashes]
    missing_ack = 0
    for (w, s), t in ret.items():
        ack = poller.acked_at(w, s)
        if ack is None:
            missing_ack += 1
            continue
        lag = ack - t
        if t_down_ms - 1000 <= t <= t_up_ms + 5000:
            lag_outage.append(lag)
        elif any(c0 <= t <= c1 for c0, c1 in cr_windows):
            lag_crash.append(lag)
        else:
            lag_normal.append(lag)
    run["lag_ms"] = {
        "method": "evidentd's GET /v1/chains/{ws} polled every 10 ms per workspace by the parent; lag = first poll "
                  "that shows the chain past the seq, minus the epoch ms the host took when dispatch returned",
        "normal": summary(lag_normal), "entries_in_outage_window": summary(lag_outage),
        "entries_around_crash": summary(lag_crash), "entries_never_seen_by_poller": missing_ack,
        "poll_errors": poller.errors}
    catch = {}
    for w in wl.workspaces:
        produced_by_up = sum(1 for (ww, s), t in ret.items() if ww == w and t <= t_up_ms)
        tc = next((t for t, size in poller.seen[w] if t >= t_up_ms and size >= produced_by_up), None)
        catch[w] = {"entries_made_before_restart": produced_by_up,
                    "caught_up_ms_after_restart": None if tc is None else tc - t_up_ms}
    run["outage"]["catch_up"] = catch
    run["dispatch_us_in_run"] = summary(dispatch_us)

    # ---- write vectors ---------------------------------------------------------------------------
    with open(os.path.join(out, "audit.jsonl"), "w", encoding="utf-8", newline="\n") as f:
        for w in wl.workspaces:
            for e in audits[w]:
                f.write(js(e) + "\n")
    with open(os.path.join(out, "describe.json"), "w", encoding="utf-8", newline="\n") as f:
        f.write(json.dumps(describes, indent=2, ensure_ascii=False) + "\n")
    with open(os.path.join(out, "receipts.jsonl"), "w", encoding="utf-8", newline="\n") as f:
        for w in wl.workspaces:
            for x in receipts[w]:
                f.write(js({"workspace": w, "seq": x["seq"], "receipt": x["receipt"]}) + "\n")
    with open(os.path.join(out, "verify.json"), "w", encoding="utf-8", newline="\n") as f:
        f.write(json.dumps({"summary": verify, "answers": per_seq}, indent=1, ensure_ascii=False) + "\n")

    host.close()
    # ---- bench: the hook's cost on dispatch --------------------------------------------------
    run["bench"] = bench(a, ev, wl, work)
    ev.stop()
    run["total_s"] = rel(time.time())
    with open(os.path.join(out, "run.json"), "w", encoding="utf-8", newline="\n") as f:
        f.write(json.dumps(run, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps({k: run[k] for k in ("workload", "compare", "submit_to_scitt", "lag_ms", "bench")},
                     indent=1)[:6000])


def do_crash(host: Host, wl: Workload, rel, ws: str, delay_ms: float) -> dict:
    """Sends a burst of calls, kills the child after kill_after answers, restarts it,
    resends the calls left without an answer (same bytes), and records all of it."""
    a = ARGS
    before = host.ctl("audit_len", ws=ws)
    texts = [wl.signed(ws, "task.create", {"assignee": "agent:drafter", "kind": "burst",
                                           "input": {"burst_call": n}}) for n in range(a.burst)]
    for t in texts:
        host.write(t)
    got = []
    ret = {}
    for _ in range(a.kill_after):
        got.append(host.read())
    if delay_ms > 0:
        time.sleep(delay_ms / 1000)
    host.kill()
    killed = rel(time.time())
    while True:  # answers already in the pipe
        x = host.read(timeout=10)
        if x is None:
            break
        got.append(x)
    for g in got:
        if g.get("seq") is not None:
            ret[(g["ws"], g["seq"])] = g["t"]
    answered_seqs = [g.get("seq") for g in got]
    opts = {"store": store_opt(a.work),
            "evident": {"url": None, "trust": os.path.join(a.work, "trust.json"),
                        "spoolDir": os.path.join(a.work, "spool")}}
    opts["evident"]["url"] = wl_url[0]
    h2 = Host(host_argv(opts), os.path.join(a.work, "host.stderr"))
    startup = h2.ctl("startup")
    startup.pop("ctl", None)
    after = h2.ctl("audit_len", ws=ws)
    restarted = rel(time.time())
    resent = []
    for t in texts[len(got):]:
        rep = h2.call(t)
        r = rep["r"]
        resent.append({"seq": rep.get("seq"), "answer": "ok" if "result" in r else r.get("error", r.get("thrown"))})
        if rep.get("seq") is not None:
            ret[(rep["ws"], rep["seq"])] = rep["t"]
    after2 = h2.ctl("audit_len", ws=ws)
    expected_len = before["len"] + len(got)
    return {
        "_host": h2, "_ret": ret,
        "workspace": ws, "kill_delay_ms": delay_ms, "killed_at_s": killed, "restarted_at_s": restarted,
        "signal": "SIGKILL", "burst_sent": len(texts), "answers_before_kill": len(got),
        "answered_seqs": answered_seqs,
        "restart": startup,
        "audit_len_before_burst": before["len"],
        "audit_len_after_restart": after["len"],
        "entries_persisted_without_answer": after["len"] - expected_len,
        "resent_after_restart": resent,
        "audit_len_after_resend": after2["len"],
    }


wl_url: list = [None]


def compare_chain(url: str, ws: str, entries: list, describe: dict, wl: Workload) -> dict:
    res = {"audit_read_entries": len(entries), "mismatches": [], "pages": 0}
    head = http_json(f"{url}/v1/chains/{ws}")
    res["evidentd_size"] = head["size"]
    res["evidentd_head"] = head["head"]
    res["describe_evidence_head"] = describe.get("evidence_head")
    res["describe_audit_count"] = describe.get("audit_count")
    res["head_equal"] = head["head"] == describe.get("evidence_head")
    seen = 0
    nxt = 0
    prev_link = "sha256:" + "0" * 64
    while nxt is not None and nxt < head["size"]:
        page = http_json(f"{url}/v1/chains/{ws}/entries?from={nxt}&limit=250")
        res["pages"] += 1
        for e in page["entries"]:
            s = e["seq"]
            if s != seen:
                res["mismatches"].append({"seq": s, "why": f"expected seq {seen}"})
            seen = s + 1
            if s >= len(entries):
                res["mismatches"].append({"seq": s, "why": "beyond audit.read"})
                continue
            c = entries[s]
            why = []
            if c["seq"] != s:
                why.append("audit.read seq")
            if wl.canonicalize(e["record"]) != wl.canonicalize(c["envelope"]):
                why.append("record differs from envelope")
            m = e.get("meta") or {}
            if m.get("arrived") != c["arrived"]:
                why.append(f"arrived {m.get('arrived')} vs {c['arrived']}")
            if m.get("prev_hash") != c.get("prev_hash") or e["prev"] != c.get("prev_hash"):
                why.append("prev_hash")
            link = "sha256:" + hashlib.sha256(wl.canonicalize(c["envelope"]) + c["prev_hash"].encode()).hexdigest()
            if e["link"] != link:
                why.append("link")
            if e["prev"] != prev_link:
                why.append("prev does not continue")
            prev_link = e["link"]
            if why:
                res["mismatches"].append({"seq": s, "why": why})
        nxt = page.get("next")
        if not page["entries"]:
            break
    res["evidentd_entries_read"] = seen
    res["every_entry_once_and_equal"] = (seen == len(entries) == head["size"] and not res["mismatches"])
    res["mismatch_count"] = len(res["mismatches"])
    res["mismatches"] = res["mismatches"][:20]
    return res


def go_cli_check(a, receipts: dict, trust_path: str, work: str) -> dict:
    cli = os.path.join(a.bin, "evident")
    h = subprocess.run([cli, "receipt", "verify", "--help"], capture_output=True, text=True, timeout=30)
    if "--trust" not in (h.stdout + h.stderr):
        return {"ran": False, "why": "this build's `evident receipt verify` has no --trust"}
    res = {"ran": True, "command": "evident receipt verify --trust trust.json receipt.json", "results": []}
    allr = [(w, x) for w in receipts for x in receipts[w]]
    picks = allr[:: max(1, len(allr) // 10)][:10]
    for w, x in picks:
        p = os.path.join(work, "r.json")
        with open(p, "w") as f:
            json.dump(x["receipt"], f)
        r = subprocess.run([cli, "receipt", "verify", "--trust", trust_path, p], capture_output=True, text=True, timeout=60)
        res["results"].append({"workspace": w, "seq": x["seq"], "exit": r.returncode})
        for member in ("statement", "seal", "checkpoint") if x is picks[0][1] else ():
            t, how = tamper(x["receipt"], member)
            with open(p, "w") as f:
                json.dump(t, f)
            r = subprocess.run([cli, "receipt", "verify", "--trust", trust_path, p], capture_output=True, text=True, timeout=60)
            res["results"].append({"workspace": w, "seq": x["seq"], "tampered": how, "exit": r.returncode,
                                   "said": (r.stderr or r.stdout).strip().replace(p, "receipt.json")[:300]})
    return res


def bench(a, ev: Evidentd, wl0: Workload, work: str) -> dict:
    """Same workload (setup + one round) in a fresh workspace per run, against two hosts
    with no store: A without hooks, B with the adapter's hooks; runs alternate A, B."""
    hosts = {}
    for tag, evident in (("without_hooks", None),
                         ("with_hooks", {"url": ev.url, "trust": os.path.join(work, "trust.json"),
                                         "spoolDir": os.path.join(work, "bench-spool")})):
        hosts[tag] = Host(host_argv({"store": "memory", "evident": evident}), os.path.join(work, f"bench-{tag}.stderr"))
    us = {k: [] for k in hosts}
    per_run = {k: [] for k in hosts}
    warm = 3
    for run_i in range(a.bench_runs + warm):
        for tag, h in hosts.items():
            wl = Workload(f"bench_{a.coordinator}_{tag}_{run_i}", 1, 1)
            xs = []
            for ws, rnd, step in wl.items:
                text, st = wl.envelope(ws, rnd, step)
                rep = h.call(text)
                wl.took(ws, rnd, st, rep)
                xs.append(rep["us"])
            if run_i >= warm:
                us[tag] += xs
                per_run[tag].append(statistics.median(xs))
    fl = hosts["with_hooks"].ctl("flush", timeout=300)
    for h in hosts.values():
        h.close()
    A, B = us["without_hooks"], us["with_hooks"]
    return {
        "method": "dispatch timed inside the host process around coordinator.dispatch (hrtime / perf_counter_ns); "
                  "no store; the same calls (7 setup + one round of the profiles journey, signed) in a fresh "
                  f"workspace per run; {a.bench_runs} runs each after {warm} warm-up runs, A and B alternating; "
                  "B's hooks talk to the live evidentd",
        "calls_per_run": len(Workload("x", 1, 1).items),
        "dispatch_us_without_hooks": summary(A), "dispatch_us_with_hooks": summary(B),
        "hook_cost_us_median": round(statistics.median(B) - statistics.median(A), 1),
        "hook_cost_us_p99": round(pct(B, 99) - pct(A, 99), 1),
        "run_medians_us": {k: [round(x, 1) for x in v] for k, v in per_run.items()},
        "flush_with_hooks": {"ok": fl["ok"], "ms": round(fl["ms"], 1)},
    }


def main() -> None:
    global ARGS
    if len(sys.argv) >= 2 and sys.argv[1] == "host":
        cmd_host(sys.argv[2], sys.argv[3])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["drive"])
    ap.add_argument("--coordinator", choices=["ts", "py"], required=True)
    ap.add_argument("--chap", required=True)
    ap.add_argument("--bin", required=True, help="directory with evidentd and evident")
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tsx-loader", default=None)
    ap.add_argument("--workspaces", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--rate", type=float, default=25.0)
    ap.add_argument("--outage", type=float, default=30.0)
    ap.add_argument("--outage-at", type=float, default=0.2)
    ap.add_argument("--crash-at", default="0.8,0.87,0.94", help="fractions of the workload")
    ap.add_argument("--kill-delay-ms", default="0,1,3", help="per crash: wait after the answers")
    ap.add_argument("--burst", type=int, default=40)
    ap.add_argument("--kill-after", type=int, default=12)
    ap.add_argument("--bench-runs", type=int, default=30)
    ARGS = ap.parse_args()
    ARGS.chap = os.path.abspath(ARGS.chap)
    ARGS.work = os.path.abspath(ARGS.work)
    import atexit
    atexit.register(_cleanup)
    signal.signal(signal.SIGTERM, lambda *_a: (_cleanup(), os._exit(143)))
    try:
        cmd_drive()
    finally:
        _cleanup()


ARGS = None
if __name__ == "__main__":
    main()
