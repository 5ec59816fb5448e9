"""End to end: the adapter against a real evidentd, fed with the reference Coordinators' logs."""
from __future__ import annotations

import base64
import json
import logging
import os
import shutil
import tempfile
import threading
import time
import unittest

from tests.harness import (JOURNEYS, SOURCES, DictStore, Evidentd, Relay, StandIn, feed_plan,
                           load_journey, tamper_sig)

from evident_chap import Refused, evident_hooks

logging.getLogger("evident_chap").setLevel(logging.CRITICAL)


class Env:
    """An evidentd behind a relay, a spool directory, and hooks wired to a stand-in."""

    def __init__(self, tc: unittest.TestCase):
        self.tmp = tempfile.mkdtemp(prefix="evident-chap-py-")
        tc.addCleanup(shutil.rmtree, self.tmp, True)
        self.ev = Evidentd(os.path.join(self.tmp, "data")).start()
        tc.addCleanup(self.ev.stop)
        self.relay = Relay()
        self.relay.target = self.ev.addr
        tc.addCleanup(self.relay.close)
        self.spool = os.path.join(self.tmp, "spool")
        st, self.trust = self.ev.get("/.well-known/evident-trust")
        assert st == 200
        self.hooks = []
        tc.addCleanup(self._close)

    def new_hooks(self, **kw):
        kw.setdefault("seal_wait", 30.0)
        h = evident_hooks(url=self.relay.url, trust=self.trust, spool_dir=self.spool, **kw)
        self.hooks.append(h)
        return h

    def restart_evidentd(self, kill=True):
        (self.ev.kill if kill else self.ev.stop)()
        self.relay.target = None
        self.relay.drop_all()
        self.ev.start()
        self.relay.target = self.ev.addr

    def _close(self):
        for h in self.hooks:
            h.close(timeout=5)


def standin_for(h):
    c = StandIn(h.on_audit, h.scitt_submitter, h.verify_scitt_receipt)
    h.attach(c)
    return c


def journeys_of(source, names=JOURNEYS):
    out = {}
    for j in names:
        v = load_journey(source, j)
        if v is not None:
            out[j] = v
    return out


class TestJourneys(unittest.TestCase):
    def check_chain(self, env, stand, entries, final_head, wsid):
        got = env.ev.entries(wsid)
        self.assertEqual(len(got), len(entries), wsid)
        for g, e in zip(got, entries):
            self.assertEqual(g["meta"]["seq"], e["seq"])
            self.assertEqual(g["meta"].get("prev_hash"), e.get("prev_hash"))
            self.assertEqual(g["meta"]["arrived"], e["arrived"])
            self.assertEqual(g["record"]["id"], e["envelope"]["id"])
        st, head = env.ev.get(f"/v1/chains/{wsid}")
        self.assertEqual(head["size"], len(entries))
        ws = stand.workspaces[wsid]
        if entries[0].get("prev_hash") is not None:  # chained from genesis: Evident's head is the Coordinator's
            self.assertEqual(head["head"], ws.chain_head)
            self.assertEqual(ws.chain_head, final_head)

    def run_source(self, source):
        env = Env(self)
        h = env.new_hooks()
        stand = standin_for(h)
        js = journeys_of(source)
        for wsid, e, nxt in feed_plan(js):
            stand.record(wsid, e, nxt)
        h.flush(timeout=60)
        self.assertFalse(os.path.exists(os.path.join(env.spool, "refused.jsonl")))
        for name, (entries, final) in js.items():
            self.check_chain(env, stand, entries, final, entries[0]["envelope"]["params"]["workspace"])
        # the spool is compacted to nothing once evidentd acknowledged everything
        for fn in os.listdir(env.spool):
            if fn.endswith(".jsonl"):
                self.assertEqual(os.path.getsize(os.path.join(env.spool, fn)), 0, fn)
        self.check_receipts(env, h, stand, js)

    def check_receipts(self, env, h, stand, js):
        for name, (entries, _) in js.items():
            wsid = entries[0]["envelope"]["params"]["workspace"]
            res = stand.submit_to_scitt({"workspace": wsid})
            self.assertIn("result", res, (name, res))
            rs = res["result"]["receipts"]
            self.assertEqual([r["seq"] for r in rs], list(range(len(entries))))
            for r in rs:
                self.assertEqual(r["receipt"]["seq"], r["seq"])
                self.assertEqual(stand.verify_receipt({"receipt": r["receipt"]}), {"result": {"verified": True}})
            # one byte flipped in the statement, the seal or the checkpoint: refused
            for r in rs[:: max(1, len(rs) // 3)]:
                for member in ("statement", "seal", "checkpoint"):
                    for pos in flip_positions(r["receipt"][member], member):
                        bad = dict(r["receipt"])
                        bad[member] = flip(r["receipt"][member], member, pos)
                        self.assertFalse(h.verify_scitt_receipt(bad), (name, r["seq"], member, pos))

    def test_ts(self):
        self.run_source("ts")

    def test_py(self):
        self.run_source("py")

    def test_live_ts(self):
        self.run_source("live-ts")

    def test_live_py(self):
        self.run_source("live-py")


def flip_positions(value, member):
    n = len(base64.b64decode(value)) if member != "checkpoint" else len(value.encode())
    return sorted({0, 1, 2, n // 7, n // 3, n // 2, (2 * n) // 3, n - 70, n - 33, n - 2, n - 1} & set(range(n)))


def flip(value, member, pos):
    if member == "checkpoint":
        b = bytearray(value.encode())
        b[pos] ^= 0x01
        return b.decode("utf-8", "replace")
    b = bytearray(base64.b64decode(value))
    b[pos] ^= 0x01
    return base64.b64encode(bytes(b)).decode()


class TestDurability(unittest.TestCase):
    def test_evidentd_killed_mid_stream(self):
        env = Env(self)
        h = env.new_hooks()
        stand = standin_for(h)
        js = journeys_of("live-py", ("burst", "profiles"))
        plan = feed_plan(js)
        half = len(plan) // 2
        for wsid, e, nxt in plan[:half]:
            stand.record(wsid, e, nxt)
            time.sleep(0.002)
        env.ev.kill()  # mid-stream: the adapter may be sending
        env.relay.target = None
        env.relay.drop_all()
        for wsid, e, nxt in plan[half:]:
            stand.record(wsid, e, nxt)
        time.sleep(0.3)  # the worker meets a dead evidentd and backs off
        env.ev.start()
        env.relay.target = env.ev.addr
        h.flush(timeout=60)
        for name, (entries, final) in js.items():
            wsid = entries[0]["envelope"]["params"]["workspace"]
            TestJourneys.check_chain(self, env, stand, entries, final, wsid)

    def test_adapter_restart_resumes(self):
        env = Env(self)
        js = journeys_of("py", ("full", "burst"))
        plan = feed_plan(js)
        h1 = env.new_hooks()
        stand = standin_for(h1)
        third = len(plan) // 3
        for wsid, e, nxt in plan[:third]:
            stand.record(wsid, e, nxt)
        h1.flush(timeout=60)
        # evidentd away: the next entries only reach the spool
        env.ev.stop()
        env.relay.target = None
        env.relay.drop_all()
        for wsid, e, nxt in plan[third:2 * third]:
            stand.record(wsid, e, nxt)
        h1.close(timeout=0.5)
        env.ev.start()
        env.relay.target = env.ev.addr
        # a new adapter on the same spool: a Coordinator restarted from its store
        h2 = env.new_hooks()
        stand._audit_listeners = [h2.on_audit]
        h2.attach(stand)
        stand.scitt_submitter, stand.verify_scitt_receipt = h2.scitt_submitter, h2.verify_scitt_receipt
        h2.flush(timeout=60)  # the spooled entries, with no Coordinator call
        for wsid, e, nxt in plan[2 * third:]:
            stand.record(wsid, e, nxt)
        h2.flush(timeout=60)
        for name, (entries, final) in js.items():
            wsid = entries[0]["envelope"]["params"]["workspace"]
            TestJourneys.check_chain(self, env, stand, entries, final, wsid)
        res = stand.submit_to_scitt({"workspace": js["burst"][0][0]["envelope"]["params"]["workspace"]})
        self.assertIn("result", res)
        self.assertEqual([r["seq"] for r in res["result"]["receipts"]], list(range(len(js["burst"][0]))))
        for r in res["result"]["receipts"]:
            self.assertTrue(h2.verify_scitt_receipt(r["receipt"]))

    def test_gap_filled_from_coordinator_log(self):
        env = Env(self)
        h = env.new_hooks()
        stand = standin_for(h)
        entries, final = load_journey("ts", "full")
        plan = feed_plan({"full": (entries, final)})
        stand._audit_listeners = []  # the process died before the spool had these
        for wsid, e, nxt in plan[:20]:
            stand.record(wsid, e, nxt)
        stand._audit_listeners = [h.on_audit]
        for wsid, e, nxt in plan[20:]:
            stand.record(wsid, e, nxt)
        h.flush(timeout=60)
        TestJourneys.check_chain(self, env, stand, entries, final, plan[0][0])


def crash(h):
    """The process dies: the worker stops where it is, nothing is flushed."""
    from evident_chap.adapter import _STOP
    h._closed = True
    h._q.put((_STOP,))
    h._thread.join(timeout=10)


def spooled(h, wid=None):
    """Waits until the worker has spooled (and fsynced) what on_audit was handed."""
    m = h._mark(wid)
    assert m.synced.wait(10)


def size_of(env, wid):
    st, head = env.ev.get(f"/v1/chains/{wid}")
    return 0 if st == 404 else head["size"]


def coordinator(h, store):
    """A Coordinator built with store=h.wrap_store(store), restored from it, then attached."""
    c = StandIn(h.on_audit, h.scitt_submitter, h.verify_scitt_receipt, store=h.wrap_store(store))
    h.attach(c)
    return c


def refused_lines(env):
    try:
        with open(os.path.join(env.spool, "refused.jsonl")) as f:
            return [json.loads(line) for line in f]
    except FileNotFoundError:
        return []


class TestWrappedStore(unittest.TestCase):
    """h.wrap_store(store): an entry reaches evidentd only once the Coordinator's store saved it."""

    def check_log(self, env, stand, wid):
        ws = stand.workspaces[wid]
        got = env.ev.entries(wid)
        self.assertEqual(len(got), len(ws.audit))
        for g, e in zip(got, ws.audit):
            self.assertEqual((g["meta"]["seq"], g["meta"]["arrived"], g["meta"].get("prev_hash"), g["record"]["id"]),
                             (e.seq, e.arrived, e.prev_hash, e.envelope["id"]))
        self.assertEqual(env.ev.get(f"/v1/chains/{wid}")[1]["head"], ws.chain_head)

    def test_delayed_save(self):
        env = Env(self)
        h = env.new_hooks()
        store = DictStore()
        stand = coordinator(h, store)
        entries, final = load_journey("live-py", "burst")
        plan = feed_plan({"burst": (entries, final)})
        wid = plan[0][0]
        store.hold = threading.Semaphore(0)
        for i, (w, e, nxt) in enumerate(plan[:4]):
            t = threading.Thread(target=stand.record, args=(w, e, nxt))
            t.start()  # on_audit, then a save that waits
            spooled(h)
            with open(os.path.join(env.spool, f"ws-{wid}.jsonl"), "rb") as f:
                self.assertIn(b"%d sha256:" % i, f.read())  # spooled at once
            h.flush(timeout=10)  # returns: the entry is not stored yet
            deadline = time.monotonic() + 0.4
            while time.monotonic() < deadline:
                self.assertEqual(size_of(env, wid), i, f"entry {i} sent before the store saved it")
                time.sleep(0.02)
            store.hold.release()
            t.join(10)
            h.flush(timeout=30)
            self.assertEqual(size_of(env, wid), i + 1)
        store.hold = None
        for w, e, nxt in plan[4:]:
            stand.record(w, e, nxt)
        h.flush(timeout=60)
        self.check_log(env, stand, wid)
        self.assertEqual(refused_lines(env), [])

    def test_crash_before_save(self):
        env = Env(self)
        store = DictStore()
        h1 = env.new_hooks()
        stand1 = coordinator(h1, store)
        js = journeys_of("live-py", ("burst", "profiles"))
        plan = feed_plan(js)
        wid = js["burst"][0][0]["envelope"]["params"]["workspace"]
        at = [i for i, (w, _, _) in enumerate(plan) if w == wid]
        k = 25  # wid's seq k .. k+2 are recorded but never stored
        cut = at[k]
        for w, e, nxt in plan[:cut]:
            stand1.record(w, e, nxt)
        h1.flush(timeout=60)
        self.assertEqual(size_of(env, wid), k)
        stand1.persist = False
        for w, e, nxt in plan[cut:at[k + 2] + 1]:
            stand1.record(w, e, nxt)
        spooled(h1)
        time.sleep(0.5)
        self.assertEqual(size_of(env, wid), k)  # nothing unstored was sent
        lost = {w: len(ws.audit) for w, ws in stand1.workspaces.items()}
        crash(h1)
        # restarted on the same store and spool: the Coordinator records seq k.. again, with
        # other arrivals (the client resent its calls)
        h2 = env.new_hooks()
        stand2 = coordinator(h2, store)
        self.assertEqual(len(stand2.workspaces[wid].audit), k)
        again = []
        for w, e, nxt in plan[cut:]:
            if len(stand2.workspaces.get(w, ()).audit if w in stand2.workspaces else ()) < lost[w]:
                e = dict(e, arrived=e["arrived"][:-4] + "987Z")
            again.append((w, e, nxt))
        for w, e, nxt in again:
            stand2.record(w, e, nxt)
        h2.flush(timeout=60)
        for w in stand2.workspaces:
            self.check_log(env, stand2, w)
        ws = stand2.workspaces[wid]
        self.assertTrue(all(ws.audit[s].arrived.endswith(".987Z") for s in (k, k + 1, k + 2)))
        self.assertEqual(refused_lines(env), [])
        # and a third start on the same spool sends nothing again and reports nothing
        h2.close()
        h3 = env.new_hooks()
        stand3 = coordinator(h3, store)
        h3.flush(timeout=30)
        for w in stand3.workspaces:
            self.check_log(env, stand3, w)
        self.assertEqual(refused_lines(env), [])

    def test_saved_but_release_lost(self):
        """The store saved k..k+2 but the process died before the worker saw it: the restart's
        load() finds them in the store, and the spooled entries are sent as stored."""
        from tests.harness import WorkspaceRecord
        from dataclasses import asdict
        env = Env(self)
        store = DictStore()
        h1 = env.new_hooks()
        stand1 = coordinator(h1, store)
        entries, final = load_journey("py", "burst")
        plan = feed_plan({"burst": (entries, final)})
        wid, k = plan[0][0], 10
        for w, e, nxt in plan[:k]:
            stand1.record(w, e, nxt)
        h1.flush(timeout=60)
        stand1.persist = False
        for w, e, nxt in plan[k:k + 3]:
            stand1.record(w, e, nxt)
        spooled(h1)
        crash(h1)
        ws = stand1.workspaces[wid]
        store.save(WorkspaceRecord(wid, asdict(ws), len(ws.audit), "2026-01-01T00:00:00Z"))  # it did save
        self.assertEqual(size_of(env, wid), k)
        h2 = env.new_hooks()
        stand2 = coordinator(h2, store)
        h2.flush(timeout=60)  # no new call: what the store holds goes out
        self.check_log(env, stand2, wid)
        self.assertEqual(size_of(env, wid), k + 3)
        for w, e, nxt in plan[k + 3:]:
            stand2.record(w, e, nxt)
        h2.flush(timeout=60)
        self.check_log(env, stand2, wid)
        self.assertEqual(refused_lines(env), [])

    def test_divergence_reported(self):
        env = Env(self)
        h1 = env.new_hooks()  # no wrapped store: an entry goes out before the store has it
        stand1 = standin_for(h1)
        entries, final = load_journey("live-py", "burst")
        plan = feed_plan({"burst": (entries, final)})
        wid = plan[0][0]
        k = 20
        for w, e, nxt in plan[:k]:
            stand1.record(w, e, nxt)
        h1.flush(timeout=60)
        h1.close()
        # the Coordinator restarts from a store that had k-1 entries, one of them another record
        h2 = env.new_hooks()
        stand2 = StandIn(h2.on_audit, h2.scitt_submitter, h2.verify_scitt_receipt)
        for w, e, nxt in plan[:k - 1]:
            stand2.record(w, tamper_sig(e) if e["seq"] == k - 4 else e, nxt)
        h2.attach(stand2)
        # ... and records seq k-1 again, with another arrival
        stand2._audit_listeners = [h2.on_audit]
        w, e, nxt = plan[k - 1]
        stand2.record(w, dict(e, arrived=e["arrived"][:-4] + "987Z"), nxt)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(refused_lines(env)) < 2:
            time.sleep(0.05)
        got = {r["seq"]: r["divergence"] for r in refused_lines(env) if "divergence" in r}
        self.assertEqual(got, {k - 4: "record", k - 1: "arrived"})
        self.assertEqual(size_of(env, wid), k)


class TestRefusal(unittest.TestCase):
    def test_tampered_signature_refused(self):
        env = Env(self)
        h = env.new_hooks(seal_wait=10)
        stand = standin_for(h)
        entries, final = load_journey("py", "small")
        bad_at = 3
        plan = feed_plan({"small": (entries, final)})
        for i, (wsid, e, nxt) in enumerate(plan):
            stand.record(wsid, tamper_sig(e) if i == bad_at else e, nxt)
        with self.assertRaises(Refused) as cm:
            h.flush(timeout=30)
        self.assertEqual(cm.exception.seq, bad_at)
        self.assertEqual(cm.exception.problem.get("code"), "bad_signature")
        with open(os.path.join(env.spool, "refused.jsonl")) as f:
            recs = [json.loads(line) for line in f]
        self.assertTrue(any(r.get("seq") == bad_at and r["problem"]["code"] == "bad_signature" for r in recs))
        wsid = plan[0][0]
        self.assertEqual(len(env.ev.entries(wsid)), bad_at)
        res = stand.submit_to_scitt({"workspace": wsid, "range": {"from_seq": bad_at, "to_seq": bad_at + 1}})
        self.assertEqual(res["error"]["code"], -32081)
        # the entries after it are never stored either
        res = stand.submit_to_scitt({"workspace": wsid, "range": {"from_seq": bad_at + 1, "to_seq": bad_at + 2}})
        self.assertEqual(res["error"]["code"], -32081)

    def test_unreachable_raises(self):
        env = Env(self)
        h = env.new_hooks(seal_wait=1.0)
        stand = standin_for(h)
        entries, final = load_journey("py", "small")
        env.ev.stop()
        env.relay.target = None
        for wsid, e, nxt in feed_plan({"small": (entries, final)}):
            stand.record(wsid, e, nxt)
        res = stand.submit_to_scitt({"workspace": entries[0]["envelope"]["params"]["workspace"]})
        self.assertEqual(res["error"]["code"], -32080)

    def test_verify_without_trust_raises(self):
        env = Env(self)
        h = evident_hooks(url=env.relay.url, spool_dir=os.path.join(env.tmp, "s2"))
        env.hooks.append(h)
        stand = StandIn(h.on_audit, h.scitt_submitter, h.verify_scitt_receipt)
        self.assertEqual(stand.verify_receipt({"receipt": {"format": "evident-entry-receipt/v1"}})["error"]["code"], -32082)
        with self.assertRaises(RuntimeError):
            h.verify_scitt_receipt({})


class TestChap03(unittest.TestCase):
    """CHAP 0.3: a refused call recorded without an envelope, {seq, arrived, request, outcome,
    prev_hash}, and statements of content type application/chap+json;version=0.3."""

    def test_refused_call_recorded_without_envelope(self):
        import hashlib
        from evident_chap.jcs import canonicalize
        env = Env(self)
        h = env.new_hooks()
        stand = standin_for(h)
        entries, final = load_journey("ts", "small")
        for wsid, e, nxt in feed_plan({"small": (entries, final)}):
            stand.record(wsid, e, nxt)
        ws = stand.workspaces[wsid]
        record = {"outcome": {"status": "refused", "code": -32011},
                  "request": {"jsonrpc": "2.0", "id": "r-ünïcode-1", "method": "control.pause",
                              "params": {"workspace": wsid, "from": "human:mallory@example.org", "reason": "höld ✋"}}}
        prev = ws.chain_head
        refused = {"seq": len(ws.audit), "arrived": "2026-05-17T09:30:00.000Z", **record, "prev_hash": prev}
        ws.chain_head = "sha256:" + hashlib.sha256(canonicalize(record) + prev.encode()).hexdigest()
        ws.audit.append(refused)
        h.on_audit(wsid, refused)  # as a 0.3 Coordinator's recordAudit calls its listeners
        h.flush(timeout=60)
        st, head = env.ev.get(f"/v1/chains/{wsid}")
        self.assertEqual((head["size"], head["head"]), (len(entries) + 1, ws.chain_head))
        statement = StandIn._build_statement(wsid, record, None, "service:coordinator")
        statement["protected"]["content-type"] = "application/chap+json;version=0.3"
        receipt = h.scitt_submitter(statement)
        self.assertIsNotNone(receipt)
        self.assertEqual(receipt["seq"], refused["seq"])
        self.assertTrue(h.verify_scitt_receipt(receipt))
        # the payload the receipt proves is the refusal's record, under CHAP 0.3's content type
        import cbor2
        sign1 = cbor2.loads(base64.b64decode(receipt["statement"]))
        protected, _, payload, _ = sign1.value
        self.assertEqual(payload, canonicalize(record))
        self.assertEqual(cbor2.loads(protected)[3], "application/chap+json;version=0.3")


if __name__ == "__main__":
    unittest.main()
