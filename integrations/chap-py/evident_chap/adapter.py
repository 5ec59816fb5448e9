"""The hooks: on_audit (queue only), the background worker (spool, send, resume, gap fill,
backoff, refusals, evidence heads), scitt_submitter and verify_scitt_receipt."""
from __future__ import annotations

import base64
import dataclasses
import hashlib
import inspect
import json
import logging
import queue
import random
import threading
import time

from . import cbor
from .client import Client, Unreachable, q
from .jcs import canonicalize
from .spool import Spool
from .verify import ReceiptError, load_trust, verify_entry_receipt

__all__ = ["EvidentHooks", "Refused", "GatedStore"]

PROFILE = "chap/0.3"
MAX_BATCH = 1000
MAX_BATCH_BYTES = 8 << 20
BACKOFF_MIN, BACKOFF_MAX = 0.1, 30.0
REFUSAL_RETRY = 60.0
COMPACT_AFTER = 4096
CHECK = 16  # entries compared with evidentd's after a start (divergence), per workspace

_ENTRY, _MARK, _STOP, _RELEASE, _GATE, _LOADED, _WAKE = 0, 1, 2, 3, 4, 5, 6


class Refused(RuntimeError):
    """flush() found a workspace stopped by a refusal of evidentd."""

    def __init__(self, workspace, seq, problem):
        super().__init__(f"evidentd refused workspace {workspace!r} at seq {seq}: "
                         f"{problem.get('code')}: {problem.get('detail')}")
        self.workspace, self.seq, self.problem = workspace, seq, problem


def entry_dict(entry) -> dict:
    """An audit entry as a dict: AuditEntry (to_dict or dataclass) or a mapping."""
    if isinstance(entry, dict):
        d = dict(entry)
    elif hasattr(entry, "to_dict"):
        d = entry.to_dict()
    elif dataclasses.is_dataclass(entry):
        d = {f.name: getattr(entry, f.name) for f in dataclasses.fields(entry)}  # shallow: deep values
    else:
        d = dict(vars(entry))
    return {k: v for k, v in d.items() if v is not None}


def record_of(d: dict):
    """What Evident hashes and links: the envelope, or {outcome, request} for a refused call."""
    if d.get("envelope") is not None:
        return d["envelope"]
    return {"outcome": d.get("outcome"), "request": d.get("request")}


class _WS:
    __slots__ = ("id", "obj", "pending", "size", "max_seq", "index", "indexed", "handed", "refused",
                 "refused_seq", "retry_at", "backoff", "head_due", "file_lines", "stuck_logged", "cap",
                 "released", "doubtful", "r_written", "div_pending", "check_budget", "to_check")

    def __init__(self, wid):
        self.id = wid
        self.obj = None  # the Coordinator's live workspace (gap fill from .audit)
        self.pending = {}  # seq -> (entry json bytes, coordinator head after it or None)
        self.size = None  # evidentd's chain size, None until asked
        self.max_seq = -1
        self.index = {}  # sha256 hex of JCS(record) -> [seq...]
        self.indexed = {}  # seq -> sha256 hex of JCS(record)
        self.handed = {}  # digest -> how many submitter calls asked for it
        self.refused = None
        self.refused_seq = None
        self.retry_at = 0.0
        self.backoff = 0.0
        self.head_due = None  # (evidence_head, audit_count) to report
        self.file_lines = 0
        self.stuck_logged = False
        self.cap = 0  # after a refusal at index i of a batch: send its first i records alone
        # With a wrapped store: entries below released are in the Coordinator's store and may be
        # sent; None without one (every entry may be sent at once). doubtful: seqs spooled by an
        # earlier instance and not known to be stored: never sent as spooled.
        self.released = None
        self.doubtful = set()
        self.r_written = -1  # the highest "R" mark in the spool file
        self.div_pending = True  # compare the last entries evidentd holds with the Coordinator's log
        self.check_budget = CHECK  # entries handed again below evidentd's size, compared with evidentd's
        self.to_check = {}  # seq -> entry dict

    def has_work(self):
        # pending holds only seqs at or past size once size is known
        if self.size is None or self.head_due is not None or self.to_check:
            return True
        if self.released is None:
            return bool(self.pending)
        return self.size < self.released

    def persisted_mark(self):
        """The "R" mark the spool may hold: doubtful entries stay above it."""
        r = self.released or 0
        return min(r, min(self.doubtful)) if self.doubtful else r


class _Mark:
    def __init__(self, ws=None):
        self.ws = ws
        self.targets = None
        self.synced = threading.Event()


class EvidentHooks:
    def __init__(self, url, token=None, trust=None, spool_dir=None, seal_wait=30.0, logger=None,
                 coordinator=None, timeout=30.0):
        self.url = url.rstrip("/")
        self.token = token
        self.seal_wait = float(seal_wait)
        self.log = logger or logging.getLogger("evident_chap")
        self._trust = load_trust(trust) if trust is not None else None
        self._client = Client(self.url, token, timeout)  # the worker's connection
        self._timeout = timeout
        self._spool = Spool(spool_dir or "evident-spool")
        self._q = queue.SimpleQueue()
        self._ws = {}
        self._cv = threading.Condition()
        self._coord = coordinator
        self._closed = False
        self._local = threading.local()
        self._clients = []  # the submitter's connections, one per calling thread
        self._gated = False  # wrap_store was called
        self._gate_seen = False  # the worker has seen it
        for wid in self._spool.workspaces():
            st = self._state(wid)
            pending, index, lines, released = self._spool.load(wid)
            st.pending, st.file_lines = pending, lines
            for h, s in index:  # the last line of a seq wins
                st.indexed[s] = h
            for s, h in st.indexed.items():
                st.index.setdefault(h, []).append(s)
            for seqs in st.index.values():
                seqs.sort()
            st.max_seq = max([st.max_seq] + list(pending) + list(st.indexed))
            if released is not None:  # written by an instance with a wrapped store
                st.released = st.r_written = released
                st.doubtful = {s for s in pending if s >= released}
        self._thread = threading.Thread(target=self._run, name="evident-chap", daemon=True)
        self._thread.start()

    # ---- the hooks ----------------------------------------------------------------------

    def attach(self, coordinator):
        """Gives the adapter the Coordinator, whose workspaces it reads (chain_head, audit)
        when on_audit is called with a workspace id, as the reference Coordinator does."""
        self._coord = coordinator
        try:
            self._q.put((_WAKE,))
        except Exception:  # noqa: BLE001
            pass
        return self

    def wrap_store(self, store):
        """A Store for the Coordinator (CoordinatorOptions(store=h.wrap_store(SqliteStore(p)))):
        it delegates to store, and once store.save(record) returned without raising, the entries
        of that workspace below len(record's audit) may be sent. With it the worker sends no
        entry the Coordinator's store does not hold. Wrap before the Coordinator is built: its
        load() tells which spooled entries of an earlier run the store kept."""
        self._gated = True
        self._q.put((_GATE,))
        return GatedStore(self, store)

    def on_audit(self, ws, entry) -> None:
        """The Coordinator's audit listener: queues the entry; never raises."""
        try:
            if ws.__class__ is str:
                wid = ws
                c = self._coord
                obj = c.workspaces.get(ws) if c is not None else None
            else:
                wid, obj = ws.id, ws
            self._q.put((_ENTRY, wid, obj, entry, getattr(obj, "chain_head", None)))
        except Exception:  # noqa: BLE001 - must never break the Coordinator's dispatch
            pass

    def flush(self, timeout=None) -> None:
        """Returns once every entry handed to on_audit before the call (with a wrapped store:
        every entry the store had saved before the call) is acknowledged by evidentd and the
        evidence heads reported. Raises Refused when a workspace is stopped by a refusal,
        TimeoutError when the timeout runs out first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        m = self._mark()
        if not m.synced.wait(None if deadline is None else max(0.0, deadline - time.monotonic())):
            raise TimeoutError("evident flush: the worker did not answer")
        self._wait(m.targets, deadline, heads=True)

    def close(self, timeout=30.0) -> None:
        """Flushes for at most timeout (30 s), then stops the worker. What is not
        acknowledged stays in the spool for the next start."""
        if self._closed:
            return
        try:
            self.flush(timeout=timeout)
        except Exception as e:  # noqa: BLE001
            self.log.warning("evident: close: %s", e)
        self._closed = True
        self._q.put((_STOP,))
        self._thread.join(timeout=10.0)
        self._client.close()
        for c in self._clients:
            c.close()

    def scitt_submitter(self, statement):
        """audit-scitt/1.0 submitter: the entry receipt of the statement's entry, as a dict;
        None when evidentd refused it (or holds another record there); raises when evidentd
        is unreachable within seal_wait."""
        deadline = time.monotonic() + self.seal_wait
        prot = statement.get("protected") or {}
        wid = (prot.get("cwt_claims") or {}).get("sub")
        payload = statement.get("payload")
        if not isinstance(wid, str) or not isinstance(payload, str):
            self.log.warning("evident: statement without cwt_claims.sub or payload")
            return None
        ctype = prot.get("content-type")
        pb = payload.encode("utf-8")
        digest = hashlib.sha256(pb).hexdigest()
        m = self._mark(wid)
        if not m.synced.wait(max(0.0, deadline - time.monotonic())):
            raise TimeoutError("evident: the worker did not answer")
        with self._cv:
            st = self._ws.get(wid)
            seqs = st.index.get(digest) if st is not None else None
            if not seqs:
                self.log.warning("evident: no audit entry of workspace %r has this payload", wid)
                return None
            n = st.handed.get(digest, 0)
            st.handed[digest] = n + 1
            seq = seqs[n % len(seqs)]
        try:
            self._wait({wid: seq}, deadline, heads=False)
        except Refused:
            return None
        except TimeoutError as e:
            raise Unreachable(f"evidentd did not acknowledge {wid} seq {seq} within {self.seal_wait} s") from e
        receipt = self._fetch_receipt(wid, seq, ctype, deadline)
        if receipt is None:
            return None
        try:
            st_raw = base64.b64decode(receipt["statement"], validate=True)
            parts = cbor.split_sign1(st_raw)
            if cbor.decode(parts[2]) != pb:
                self.log.error("evident: %s seq %d holds another record than the statement's", wid, seq)
                return None
        except (KeyError, TypeError, ValueError) as e:
            self.log.error("evident: %s seq %d: unreadable entry receipt: %s", wid, seq, e)
            return None
        return receipt

    def verify_scitt_receipt(self, receipt) -> bool:
        """Checks an entry receipt offline against the pinned trust file."""
        if self._trust is None:
            raise RuntimeError("evident: no trust file configured: a receipt cannot be verified")
        try:
            verify_entry_receipt(receipt, self._trust)
            return True
        except ReceiptError as e:
            self.log.info("evident: receipt refused: %s", e)
            return False
        except Exception as e:  # noqa: BLE001
            self.log.info("evident: receipt refused: %s: %s", e.__class__.__name__, e)
            return False

    # ---- waiting -------------------------------------------------------------------------

    def _mark(self, ws=None):
        m = _Mark(ws)
        if self._closed or not self._thread.is_alive():
            raise RuntimeError("evident: adapter closed")
        self._q.put((_MARK, m))
        return m

    def _wait(self, targets, deadline, heads):
        with self._cv:
            while True:
                done = True
                for wid, t in targets.items():
                    st = self._ws[wid]
                    if st.refused is not None and st.refused_seq <= t:
                        raise Refused(wid, st.refused_seq, st.refused)
                    if st.size is None or st.size <= t or (heads and st.head_due is not None):
                        done = False
                if done:
                    return
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError("evident: entries not acknowledged in time")
                self._cv.wait(left if left is not None else 1.0)

    def _fetch_receipt(self, wid, seq, ctype, deadline):
        c = getattr(self._local, "client", None)
        if c is None:
            c = self._local.client = Client(self.url, self.token, self._timeout)
            self._clients.append(c)
        path = f"/v1/chains/{q(wid)}/entries/{seq}/entry-receipt"
        if ctype:
            path += "?content_type=" + q(ctype)
        sealed_at = None
        pause = 0.05
        last = None
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Unreachable(f"evidentd gave no entry receipt of {wid} seq {seq} within {self.seal_wait} s ({last})")
            try:
                r = c.request("GET", path, timeout=max(0.1, min(left, self._timeout)))
                if r.status == 200:
                    return r.json()
                p = r.problem()
                last = p.get("code")
                if r.status == 409 and p.get("code") == "not_sealed":
                    if sealed_at is None or time.monotonic() - sealed_at > 5.0:
                        s = c.request("POST", f"/v1/chains/{q(wid)}/seal", body=b"", timeout=max(0.1, min(left, self._timeout)))
                        if s.status >= 400 and s.status < 500:
                            self.log.error("evident: seal of %s refused: %s", wid, s.problem())
                            return None
                        sealed_at = time.monotonic()
                elif r.status >= 500 or r.status == 429:
                    pass
                else:
                    self.log.error("evident: entry receipt of %s seq %d: %s", wid, seq, p)
                    return None
            except Unreachable as e:
                last = str(e)
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 2, 0.5)

    # ---- the worker ----------------------------------------------------------------------

    def _state(self, wid):
        st = self._ws.get(wid)
        if st is None:
            with self._cv:
                st = self._ws[wid] = _WS(wid)
                if self._gate_seen:
                    st.released = 0
        return st

    def _gate(self):
        """wrap_store was called: from now on only stored entries are sent. Spooled entries of
        an instance without a wrapped store are not known to be stored."""
        self._gate_seen = True
        for st in self._ws.values():
            if st.released is None:
                st.released = 0
                st.doubtful = set(st.pending)

    def _release(self, wid, n):
        """store.save returned for a record of wid with n audit entries."""
        st = self._state(wid)
        if st.released is None:
            st.released = 0
        if n > st.released:
            st.released = n

    def _loaded(self, items):
        """The wrapped store's load(): the workspaces as the Coordinator restarts from them.
        A doubtful spooled entry is kept as the store holds it, or forgotten when the store
        has no entry at its seq (the Coordinator will record that seq again)."""
        logs = dict(items)
        for st in list(self._ws.values()):
            if st.released is None:
                continue
            audit = logs.get(st.id)
            n = len(audit) if audit is not None else 0
            for s in sorted(st.doubtful):
                if s < n:
                    self._ingest(st.id, None, audit[s], None, internal=True)
                else:
                    self._forget(st, s)
            if st.released > n:
                self.log.warning("evident: %s: the store holds %d audit entries, fewer than the %d it "
                                 "had saved", st.id, n, st.released)
            st.released = max(st.released, n)

    def _forget(self, st, s):
        st.pending.pop(s, None)
        st.doubtful.discard(s)
        h = st.indexed.pop(s, None)
        if h is not None:
            with self._cv:
                lst = st.index.get(h)
                if lst and s in lst:
                    lst.remove(s)
                    if not lst:
                        del st.index[h]

    def _run(self):
        stop = False
        while not stop:
            now = time.monotonic()
            wake = None
            for st in self._ws.values():
                if st.has_work() or st.refused is not None:
                    wake = st.retry_at if wake is None else min(wake, st.retry_at)
            timeout = 1.0 if wake is None else min(1.0, max(0.0, wake - now))
            items = []
            try:
                items.append(self._q.get(timeout=timeout) if timeout > 0 else self._q.get_nowait())
            except queue.Empty:
                pass
            if items:
                try:
                    while len(items) < 20000:
                        items.append(self._q.get_nowait())
                except queue.Empty:
                    pass
            marks = []
            for it in items:
                if it[0] == _ENTRY:
                    try:
                        self._ingest(it[1], it[2], it[3], it[4])
                    except Exception as e:  # noqa: BLE001
                        self.log.error("evident: cannot spool an audit entry of %r: %s", it[1], e)
                elif it[0] == _MARK:
                    marks.append(it[1])
                elif it[0] == _RELEASE:
                    self._release(it[1], it[2])
                elif it[0] == _GATE:
                    self._gate()
                elif it[0] == _LOADED:
                    try:
                        self._loaded(it[1])
                    except Exception as e:  # noqa: BLE001
                        self.log.error("evident: cannot compare the spool with the store's workspaces: %s", e)
                elif it[0] == _STOP:
                    stop = True
            try:
                for st in self._ws.values():
                    if st.released is not None and st.persisted_mark() > st.r_written:
                        st.r_written = st.persisted_mark()
                        self._spool.release(st.id, st.r_written)
                self._spool.sync()
            except OSError as e:
                self.log.error("evident: spool fsync failed: %s", e)
            with self._cv:
                for m in marks:
                    m.targets = {}
                    for w, s in self._ws.items():
                        if m.ws is None or w == m.ws:
                            t = s.max_seq if s.released is None else s.released - 1
                            if t >= 0:
                                m.targets[w] = t
                    m.synced.set()
            if stop:
                break
            try:
                self._pump()
            except Exception as e:  # noqa: BLE001 - the worker must survive
                self.log.exception("evident: worker error: %s", e)
        try:
            self._spool.close()
        except OSError:
            pass

    def _ingest(self, wid, obj, entry, head, internal=False):
        """Spools an entry. internal: taken from the Coordinator's log or store, not handed to
        on_audit."""
        st = self._state(wid)
        if obj is not None:
            st.obj = obj
        d = entry_dict(entry)
        seq = int(d["seq"])
        if seq > st.max_seq:
            st.max_seq = seq
        replace = seq in st.doubtful  # the Coordinator's version replaces an earlier run's
        acked = st.size is not None and seq < st.size
        if acked and not internal and st.check_budget > 0:  # handed again below evidentd's size
            st.check_budget -= 1
            st.to_check[seq] = d
        digest = None
        if replace or seq not in st.indexed:
            digest = hashlib.sha256(canonicalize(record_of(d))).hexdigest()
        known = (seq in st.pending and not replace) or acked
        if known and digest is None:
            return
        if head is None and d.get("prev_hash") is not None:
            head = "sha256:" + hashlib.sha256(canonicalize(record_of(d)) + d["prev_hash"].encode("utf-8")).hexdigest()
        ej = canonicalize(d)  # iterative, so any depth the Coordinator accepted
        if st.released is not None and st.r_written < 0:
            # a spool file written with a wrapped store starts with its mark
            st.r_written = st.persisted_mark()
            self._spool.release(wid, st.r_written)
        old = st.indexed.get(seq)
        if digest == old:
            digest = None
        self._spool.append(wid, seq, ej, head, digest)
        st.file_lines += 1
        if digest is not None:
            with self._cv:
                if old is not None:
                    lst = st.index.get(old)
                    if lst and seq in lst:
                        lst.remove(seq)
                        if not lst:
                            del st.index[old]
                st.indexed[seq] = digest
                lst = st.index.setdefault(digest, [])
                lst.append(seq)
                if len(lst) > 1:
                    lst.sort()
        if replace:
            st.doubtful.discard(seq)
        if not known:
            st.pending[seq] = (ej, head)

    def _pump(self):
        for st in list(self._ws.values()):
            if st.refused is not None:
                if time.monotonic() < st.retry_at:
                    continue
                self.log.info("evident: retrying refused workspace %r", st.id)
                st.size = None  # read the chain again: an operator may have mended it
            self._check_soon(st)
            while st.has_work() and time.monotonic() >= st.retry_at:
                if not self._step(st):
                    break
            self._check_soon(st)

    def _check_soon(self, st):
        if st.size is not None and (st.div_pending or st.to_check) and time.monotonic() >= st.retry_at:
            try:
                self._check(st)
            except Unreachable as e:
                self._backoff(st, str(e))

    def _check(self, st):
        """After a start: compares the entries evidentd holds with the Coordinator's at the
        same seqs — the last CHECK below min(evidentd's size, the log's length), and the first
        CHECK handed to on_audit again below evidentd's size. A different record (or arrival)
        is logged as an error and kept in refused.jsonl as a divergence."""
        seqs = dict(st.to_check)
        if st.div_pending:
            if st.size == 0:
                st.div_pending = False
            else:
                obj = st.obj
                if obj is None and self._coord is not None:
                    obj = self._coord.workspaces.get(st.id)
                audit = getattr(obj, "audit", None)
                if audit is not None:
                    st.div_pending = False
                    m = min(st.size, len(audit))
                    for s in range(max(0, m - CHECK), m):
                        seqs.setdefault(s, audit[s])
        if not seqs:
            return
        st.to_check = seqs  # kept for a retry until compared
        order = sorted(seqs)
        i = 0
        while i < len(order):
            lo, j = order[i], i
            while j + 1 < len(order) and order[j + 1] - lo < 100:
                j += 1
            r = self._client.request("GET", f"/v1/chains/{q(st.id)}/entries?from={lo}&limit={order[j] - lo + 1}")
            if r.status >= 500 or r.status == 429:
                raise Unreachable(f"GET entries: HTTP {r.status}")
            got = {}
            if r.status == 200:
                try:
                    got = {e["seq"]: e for e in r.json().get("entries", [])}
                except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
                    got = {}
            for s in order[i:j + 1]:
                e = got.get(s)
                if e is None:
                    continue
                d = entry_dict(seqs[s])
                try:
                    link = "sha256:" + hashlib.sha256(canonicalize(record_of(d)) + e["prev"].encode("utf-8")).hexdigest()
                except (KeyError, TypeError, AttributeError, ValueError):
                    continue
                if link != e.get("link"):
                    what = {"divergence": "record", "evidentd_link": e.get("link"), "coordinator_link": link}
                elif isinstance(e.get("meta"), dict) and e["meta"].get("arrived") != d.get("arrived"):
                    what = {"divergence": "arrived", "evidentd_arrived": e["meta"].get("arrived"),
                            "coordinator_arrived": d.get("arrived")}
                else:
                    continue
                self.log.error("evident: %s seq %d: evidentd holds another %s than the Coordinator's log: %s",
                               st.id, s, "record" if what["divergence"] == "record" else "arrival", what)
                self._spool.refused({"workspace": st.id, "seq": s, **what, "at": _now()})
            i = j + 1
        st.to_check = {}

    def _backoff(self, st, why, retry_after=None):
        st.backoff = BACKOFF_MIN if st.backoff == 0 else min(BACKOFF_MAX, st.backoff * 2)
        d = st.backoff * (0.5 + random.random() / 2)
        if retry_after:
            d = max(d, min(retry_after, BACKOFF_MAX))
        st.retry_at = time.monotonic() + d
        self.log.warning("evident: %s: %s; retrying in %.1f s", st.id, why, d)

    def _notify(self):
        with self._cv:
            self._cv.notify_all()

    def _step(self, st) -> bool:
        c = self._client
        base = f"/v1/chains/{q(st.id)}"
        try:
            if st.size is None:
                r = c.request("GET", base)
                if r.status == 404:
                    size = 0
                elif r.status == 200:
                    size = int(r.json()["size"])
                else:
                    self._backoff(st, f"GET chain: HTTP {r.status}", _retry_after(r))
                    return False
                with self._cv:
                    st.size = size
                self._drop_acked(st)
                self._notify()
            if st.head_due is not None:
                head, count = st.head_due
                r = c.request("POST", base + "/evidence-head",
                              body=json.dumps({"evidence_head": head, "audit_count": count}).encode(),
                              content_type="application/json")
                if r.status >= 500 or r.status == 429:
                    self._backoff(st, f"evidence head: HTTP {r.status}", _retry_after(r))
                    return False
                if r.status >= 400:
                    p = r.problem()
                    self.log.error("evident: %s: evidence head %s at %d refused: %s: %s",
                                   st.id, head, count, p.get("code"), p.get("detail"))
                    self._spool.refused({"workspace": st.id, "evidence_head": head, "audit_count": count,
                                         "problem": p, "at": _now()})
                with self._cv:
                    st.head_due = None
                self._notify()
            start = st.size
            limit = st.released
            if limit is None:
                if start not in st.pending:
                    later = [s for s in st.pending if s > start]
                    if not later:
                        return False
                    if not self._gapfill(st, start, min(later)):
                        return False
            else:  # a wrapped store: only what it holds, below released
                if start >= limit:
                    return False
                if start not in st.pending or start in st.doubtful:
                    # stored, so the Coordinator's log holds it as stored
                    end = start + 1
                    while (end < limit and end - start < MAX_BATCH
                           and (end not in st.pending or end in st.doubtful)):
                        end += 1
                    if not self._gapfill(st, start, end):
                        return False
            seqs, total, last_head, s = [], 0, None, start
            cap = st.cap or MAX_BATCH
            st.cap = 0
            while s in st.pending and len(seqs) < cap and (limit is None or (s < limit and s not in st.doubtful)):
                ej, head = st.pending[s]
                if seqs and total + len(ej) > MAX_BATCH_BYTES:
                    break
                seqs.append(s)
                total += len(ej) + 1
                last_head = head
                s += 1
            body = b"\n".join(st.pending[x][0] for x in seqs) + b"\n"
            r = c.request("POST", base + "/entries?profile=" + q(PROFILE), body=body, content_type="application/jsonl")
            if r.status in (200, 201):
                resp = r.json()
                with self._cv:
                    st.size = max(int(resp.get("size", 0)), seqs[-1] + 1)
                    st.backoff = 0.0
                    if st.refused is not None:
                        self.log.info("evident: workspace %r accepted again", st.id)
                    st.refused = st.refused_seq = None
                    if last_head is not None:
                        st.head_due = (last_head, seqs[-1] + 1)
                self._drop_acked(st)
                self._notify()
                return True
            if r.status >= 500 or r.status == 429 or r.status == 408:
                self._backoff(st, f"POST entries: HTTP {r.status}", _retry_after(r))
                return False
            p = r.problem()
            idx = p.get("index") if isinstance(p.get("index"), int) else 0
            if 0 < idx < len(seqs):
                st.cap = idx  # a batch is atomic: store the records before the refused one
                return True
            rseq = seqs[min(max(idx, 0), len(seqs) - 1)]
            self.log.error("evident: workspace %r stopped: seq %d refused: %s: %s (retried every %d s)",
                           st.id, rseq, p.get("code"), p.get("detail"), REFUSAL_RETRY)
            try:
                entry = st.pending[rseq][0].decode("utf-8")
            except KeyError:
                entry = None
            self._spool.refused({"workspace": st.id, "seq": rseq, "problem": p, "entry_jcs": entry, "at": _now()})
            with self._cv:
                st.refused, st.refused_seq = p, rseq
                st.retry_at = time.monotonic() + REFUSAL_RETRY
            self._notify()
            return False
        except Unreachable as e:
            self._backoff(st, str(e))
            return False

    def _gapfill(self, st, start, end) -> bool:
        """Entries start..end-1 are neither in the spool nor in evidentd: take them from the
        Coordinator's own log."""
        obj = st.obj
        if obj is None and self._coord is not None:
            obj = self._coord.workspaces.get(st.id)
        audit = getattr(obj, "audit", None)
        if audit is None or len(audit) < end:
            if not st.stuck_logged:
                self.log.error("evident: %s: entries %d..%d are missing and no Coordinator log holds them "
                               "(attach the Coordinator)", st.id, start, end - 1)
                st.stuck_logged = True
            st.retry_at = time.monotonic() + 1.0
            return False
        for i in range(start, end):
            d = entry_dict(audit[i])
            if int(d["seq"]) != i:
                self.log.error("evident: %s: Coordinator log position %d holds seq %s", st.id, i, d.get("seq"))
                st.retry_at = time.monotonic() + 1.0
                return False
            self._ingest(st.id, None, d, None, internal=True)
        self.log.info("evident: %s: entries %d..%d taken from the Coordinator's log", st.id, start, end - 1)
        self._spool.sync()
        st.stuck_logged = False
        return True

    def _drop_acked(self, st):
        for s in [s for s in st.pending if s < st.size]:
            del st.pending[s]
            st.doubtful.discard(s)
        mark = None
        if st.released is not None:
            mark = st.persisted_mark()
        if not st.pending and st.file_lines:
            self._spool.rewrite(st.id, {}, mark)
            st.file_lines = 0
        elif st.file_lines - len(st.pending) > COMPACT_AFTER:
            self._spool.rewrite(st.id, st.pending, mark)
            st.file_lines = len(st.pending)
        else:
            return
        if mark is not None:
            st.r_written = mark


class GatedStore:
    """The Coordinator's store, wrapped by EvidentHooks.wrap_store: load, save, delete and close
    are the store's; a save that returned without raising releases that workspace's entries
    below len(record.data["audit"]) (record.version when the record has no audit) to evidentd."""

    def __init__(self, hooks, store):
        self._hooks, self._store = hooks, store

    def load(self):
        records = self._store.load()
        try:
            items = []
            for r in records:
                data = getattr(r, "data", None)
                audit = data.get("audit") if isinstance(data, dict) else None
                if isinstance(audit, list):
                    items.append((r.id, audit))
            self._hooks._q.put((_LOADED, items))
        except Exception:  # noqa: BLE001 - must never break the Coordinator's start
            pass
        return records

    def save(self, record):
        res = self._store.save(record)
        if inspect.isawaitable(res):
            return self._after(res, record)
        self._saved(record)
        return res

    async def _after(self, res, record):
        out = await res
        self._saved(record)
        return out

    def _saved(self, record):
        try:
            data = record.data
            audit = data.get("audit") if isinstance(data, dict) else None
            n = len(audit) if isinstance(audit, list) else record.version
            if isinstance(n, int) and not isinstance(n, bool):
                self._hooks._q.put((_RELEASE, record.id, n))
        except Exception:  # noqa: BLE001
            pass

    def delete(self, id):  # noqa: A002 - the Store protocol's name
        return self._store.delete(id)

    def close(self):
        return self._store.close()

    def __getattr__(self, name):
        return getattr(self._store, name)


def _retry_after(r):
    try:
        return float(r.headers.get("Retry-After"))
    except (TypeError, ValueError):
        return None


def _now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
