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

from tests.harness import (JOURNEYS, SOURCES, Evidentd, Relay, StandIn, feed_plan, load_journey,
                     tamper_sig)

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


class ReceiptEndpoint:
    available = None


def receipts_available(env) -> bool:
    if ReceiptEndpoint.available is None:
        st, p = env.ev.get("/v1/chains/nope/entries/0/entry-receipt")
        ReceiptEndpoint.available = not (st == 404 and isinstance(p, dict) and p.get("code") not in ("no_such_chain", "not_found", "no_such_entry")) and st != 405
    return ReceiptEndpoint.available


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
        if receipts_available(env):
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
        if receipts_available(env):
            res = stand.submit_to_scitt({"workspace": js["burst"][0][0]["envelope"]["params"]["workspace"]})
            self.assertIn("result", res)

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


if __name__ == "__main__":
    unittest.main()
