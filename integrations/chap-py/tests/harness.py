"""Test harness: a real evidentd on loopback (port 0), a TCP relay in front of it so the
adapter keeps one URL across evidentd restarts, and a stand-in for the reference
Coordinator that calls the hooks exactly as chap_coordinator 0.2.10 does."""
from __future__ import annotations

import atexit
import copy
import gzip
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from evident_chap.jcs import canonicalize  # noqa: E402

REPO = HERE.parents[2]
VECTORS = REPO / "testvectors" / "chap-reference"
SOURCES = ("ts", "py", "live-ts", "live-py")
JOURNEYS = ("small", "full", "burst", "profiles", "deep", "unchained-prefix")
ZERO = "sha256:" + "0" * 64

sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))  # json.loads of the deep journey

_bin_lock = threading.Lock()
_bin = None


def evidentd_bin() -> str:
    global _bin
    with _bin_lock:
        if _bin is None:
            env = os.environ.get("EVIDENTD_BIN")
            if env:
                _bin = env
            else:
                d = tempfile.mkdtemp(prefix="evident-chap-py-bin-")
                atexit.register(shutil.rmtree, d, True)
                out = os.path.join(d, "evidentd")
                subprocess.run(["go", "build", "-o", out, "./cmd/evidentd"], cwd=REPO, check=True, timeout=600)
                _bin = out
    return _bin


def load_journey(source: str, journey: str):
    """The audit entries a reference Coordinator wrote, and its final chain head."""
    base = VECTORS / source / f"{journey}.audit.jsonl"
    if base.exists():
        data = base.read_bytes()
    elif base.with_suffix(".jsonl.gz").exists():
        data = gzip.decompress(base.with_suffix(".jsonl.gz").read_bytes())
    else:
        return None
    entries = [json.loads(line) for line in data.decode("utf-8").split("\n") if line.strip()]
    vc = json.loads((VECTORS / source / f"{journey}.verify_chain.json").read_text())
    return entries, vc.get("chain_head")


class Relay:
    """127.0.0.1:0 -> the current evidentd. A connection while no evidentd runs is closed."""

    def __init__(self):
        self.target = None
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._conns = []
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self._stop:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            t = self.target
            try:
                if t is None:
                    raise OSError("no target")
                u = socket.create_connection(t, timeout=5)
                u.settimeout(None)
            except OSError:
                c.close()
                continue
            self._conns.append((c, u))
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a, b):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def drop_all(self):
        for c, u in self._conns:
            for s in (c, u):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self._conns = []

    def close(self):
        self._stop = True
        self.sock.close()
        self.drop_all()


class Evidentd:
    def __init__(self, data_dir: str):
        self.data = data_dir
        self.proc = None
        self.addr = None
        self.log_path = os.path.join(data_dir + "-logs", "evidentd.log")
        os.makedirs(os.path.dirname(self.log_path), exist_ok=True)

    def start(self, timeout=30.0):
        self.log = open(self.log_path, "ab")
        start = self.log.tell()
        self.proc = subprocess.Popen([evidentd_bin(), "-data", self.data, "-listen", "127.0.0.1:0",
                                      "-checkpoint-interval", "200ms"],
                                     stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(self.log_path, "rb") as f:
                f.seek(start)
                m = re.search(rb'msg="evidentd listening" addr=http://127\.0\.0\.1:(\d+)', f.read())
            if m:
                self.addr = ("127.0.0.1", int(m.group(1)))
                return self
            if self.proc.poll() is not None:
                raise RuntimeError("evidentd exited: " + open(self.log_path, errors="replace").read()[-2000:])
            time.sleep(0.02)
        raise RuntimeError("evidentd did not say where it listens")

    @property
    def url(self):
        return f"http://{self.addr[0]}:{self.addr[1]}"

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        if self.proc is not None:
            self.log.close()
        self.proc = None

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.proc is not None:
            self.log.close()
        self.proc = None

    def get(self, path):
        try:
            with urllib.request.urlopen(self.url + path, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def entries(self, chain):
        out, frm = [], 0
        while True:
            st, page = self.get(f"/v1/chains/{chain}/entries?from={frm}&limit=50")
            if st == 404:
                return []
            assert st == 200, page
            out.extend(page["entries"])
            if page.get("next") is None:
                return out
            frm = page["next"]


# ---- the stand-in Coordinator (chap_coordinator 0.2.10) ---------------------------------------

@dataclass
class AuditEntry:  # chap_coordinator.types.AuditEntry
    seq: int
    arrived: str
    envelope: dict
    prev_hash: str | None = None

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"seq": self.seq, "arrived": self.arrived, "envelope": self.envelope}
        if self.prev_hash is not None:
            out["prev_hash"] = self.prev_hash
        return out


@dataclass
class Workspace:
    id: str
    audit: list = field(default_factory=list)
    chain_head: str | None = None


@dataclass
class WorkspaceRecord:  # chap_coordinator.storage.store.WorkspaceRecord
    id: str
    data: Any
    version: int
    updated_at: str


class DictStore:
    """A Store (chap_coordinator.storage.store) holding each record as JSON text, as SqliteStore
    does. hold: a threading.Semaphore each save acquires first (a delayed save)."""

    def __init__(self):
        self.rows: dict[str, tuple] = {}
        self.hold = None
        self.saved = 0

    def load(self):
        return [WorkspaceRecord(i, json.loads(d), v, u) for i, (d, v, u) in self.rows.items()]

    def save(self, record):
        if self.hold is not None:
            self.hold.acquire()
        self.rows[record.id] = (json.dumps(record.data, sort_keys=True), record.version, record.updated_at)
        self.saved += 1

    def delete(self, id):
        self.rows.pop(id, None)

    def close(self):
        pass


class StandIn:
    """Replays a reference Coordinator's audit log through the hooks the way its
    _record_audit, audit.submit_to_scitt and audit.verify_receipt call them; with a store, it
    restores from store.load() when built and saves after the listeners, as _persist does."""

    def __init__(self, on_audit=None, scitt_submitter=None, verify_scitt_receipt=None, store=None):
        self.workspaces: dict[str, Workspace] = {}
        self._audit_listeners = [on_audit] if on_audit else []
        self.scitt_submitter = scitt_submitter
        self.verify_scitt_receipt = verify_scitt_receipt
        self.store = store
        self.persist = True  # False: the process dies before store.save
        if store is not None:  # _restore_from_store
            for r in store.load():
                self.workspaces[r.id] = Workspace(r.id, [AuditEntry(**a) for a in r.data["audit"]],
                                                  r.data.get("chain_head"))

    def _persist(self, ws):
        if self.store is None or not self.persist:
            return
        try:
            self.store.save(WorkspaceRecord(ws.id, asdict(ws), len(ws.audit), "2026-01-01T00:00:00Z"))
        except Exception:
            pass

    def record(self, wsid: str, logged: dict, head_after):
        """coordinator._record_audit with the entry the Coordinator logged; head_after is the
        chain_head it had after it (the next entry's prev_hash, or verify_chain's head)."""
        ws = self.workspaces.get(wsid)
        if ws is None:
            ws = self.workspaces[wsid] = Workspace(wsid)
        entry = AuditEntry(seq=len(ws.audit), arrived=logged["arrived"], envelope=logged["envelope"])
        assert entry.seq == logged["seq"]
        if "prev_hash" in logged:
            entry.prev_hash = logged["prev_hash"]
            ws.chain_head = head_after
        ws.audit.append(entry)
        for listener in self._audit_listeners:
            try:
                listener(ws.id, entry)
            except Exception:
                pass
        self._persist(ws)

    @staticmethod
    def _build_statement(workspace_id, entry_envelope, sender, issuer):  # audit_scitt._build_statement
        payload_canonical = canonicalize(entry_envelope).decode("utf-8")
        return {
            "protected": {
                "alg": -8,
                "iss": issuer,
                "kid": "scitt-issuer",
                "cwt_claims": {"sub": workspace_id, "iat": None},
                "content-type": "application/chap+json;version=0.2",
            },
            "payload": payload_canonical,
            "signature": "<deployment-supplied>",
        }

    def submit_to_scitt(self, p: dict) -> dict:  # audit_scitt.audit_submit_to_scitt
        ws = self.workspaces.get(p.get("workspace", ""))
        if not ws:
            return {"error": {"code": -32602}}
        rng = p.get("range") or {}
        from_seq = int(rng.get("from_seq", 0))
        to_seq = int(rng.get("to_seq", len(ws.audit)))
        issuer = p.get("issuer") or "service:coordinator"
        receipts = []
        for entry in ws.audit[from_seq:to_seq]:
            statement = self._build_statement(ws.id, entry.envelope,
                                              entry.envelope.get("params", {}).get("from"), issuer)
            try:
                receipt = self.scitt_submitter(statement)
            except Exception as exc:
                return {"error": {"code": -32080, "message": f"SCITT submission error: {exc}"}}
            if receipt is None:
                return {"error": {"code": -32081, "message": f"Statement rejected at seq {entry.seq}"}}
            receipts.append({"seq": entry.seq, "receipt": receipt})
        return {"result": {"receipts": receipts}}

    def verify_receipt(self, p: dict) -> dict:  # audit_scitt.audit_verify_receipt
        receipt = p.get("receipt")
        if not isinstance(receipt, dict):
            return {"error": {"code": -32602}}
        if self.verify_scitt_receipt is not None:
            try:
                ok = bool(self.verify_scitt_receipt(receipt))
            except Exception as exc:
                return {"error": {"code": -32082, "message": f"verify error: {exc}"}}
            if not ok:
                return {"error": {"code": -32082, "message": "Receipt did not verify"}}
            return {"result": {"verified": True}}
        return {"error": {"code": -32082}}


def feed_plan(journeys: dict):
    """Interleaves the journeys' entries round robin: [(wsid, entry, head_after)]."""
    lists = []
    for entries, final in journeys.values():
        wsid = entries[0]["envelope"]["params"]["workspace"]
        items = []
        for i, e in enumerate(entries):
            nxt = entries[i + 1].get("prev_hash") if i + 1 < len(entries) else final
            items.append((wsid, e, nxt))
        lists.append(items)
    out = []
    i = 0
    while any(i < len(x) for x in lists):
        for x in lists:
            if i < len(x):
                out.append(x[i])
        i += 1
    return out


def tamper_sig(entry: dict) -> dict:
    e = copy.deepcopy(entry)
    sig = e["envelope"]["sig"]
    head, b64 = sig.rsplit(":", 1)
    c = "A" if b64[5] != "A" else "B"
    e["envelope"]["sig"] = head + ":" + b64[:5] + c + b64[6:]
    return e
