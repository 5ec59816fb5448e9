"""Measures the adapter: the cost of on_audit on the Coordinator's thread, and the lag from
on_audit to evidentd's acknowledgement. Run from the repository root:

    /usr/bin/python3 integrations/chap-py/bench.py

Builds evidentd (or takes EVIDENTD_BIN) and runs it on loopback in a temporary directory."""
from __future__ import annotations

import logging
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from tests.harness import DictStore, Evidentd, StandIn, WorkspaceRecord, feed_plan, load_journey  # noqa: E402
from evident_chap import evident_hooks  # noqa: E402

logging.getLogger("evident_chap").setLevel(logging.CRITICAL)


class NullStore:
    def load(self):
        return []

    def save(self, record):
        pass


def bench_on_audit(tmp, n=100_000, wrapped=False):
    tag = "w" if wrapped else "a"
    ev = Evidentd(os.path.join(tmp, "data-" + tag)).start()
    try:
        entries, final = load_journey("live-py", "profiles")
        h = evident_hooks(url=ev.url, spool_dir=os.path.join(tmp, "spool-" + tag))
        stand = StandIn(h.on_audit, store=h.wrap_store(DictStore()) if wrapped else None)
        h.attach(stand)
        wsid, e, nxt = feed_plan({"p": (entries, final)})[0]
        stand.record(wsid, e, nxt)  # one real workspace; the calls below repeat its entry
        ws = stand.workspaces[wsid]
        entry = ws.audit[0]
        on_audit = h.on_audit
        best = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(n):
                on_audit(wsid, entry)
            best.append((time.perf_counter() - t0) / n * 1e6)
        save_us = None
        if wrapped:  # the wrapper's own cost per save: a store that does nothing, wrapped
            ws_ = h.wrap_store(NullStore())
            rec = WorkspaceRecord(wsid, {"audit": [{}] * 1}, 1, "")
            runs = []
            for _ in range(5):
                t0 = time.perf_counter()
                for _ in range(n):
                    ws_.save(rec)
                runs.append((time.perf_counter() - t0) / n * 1e6)
            save_us = min(runs)
        h.close(timeout=0.1)  # the repeated seq 0 is a duplicate: nothing to wait for
        return min(best), statistics.median(best), save_us
    finally:
        ev.stop()


def bench_lag(tmp, wrapped=False):
    tag = "w" if wrapped else ""
    ev = Evidentd(os.path.join(tmp, "data-b" + tag)).start()
    try:
        js = {j: load_journey("live-py", j) for j in ("burst", "profiles")}
        h = evident_hooks(url=ev.url, spool_dir=os.path.join(tmp, "spool-b" + tag))
        stand = StandIn(h.on_audit, store=h.wrap_store(DictStore()) if wrapped else None)
        h.attach(stand)
        plan = feed_plan(js)
        lags = []
        for wsid, e, nxt in plan:  # one at a time: on_audit -> acknowledged and head reported
            t0 = time.perf_counter()
            stand.record(wsid, e, nxt)
            h.flush(timeout=30)
            lags.append((time.perf_counter() - t0) * 1e3)
        h.close()
        # a burst: every entry of both journeys again, on a fresh evidentd
        ev2 = Evidentd(os.path.join(tmp, "data-c" + tag)).start()
        try:
            h2 = evident_hooks(url=ev2.url, spool_dir=os.path.join(tmp, "spool-c" + tag))
            stand2 = StandIn(h2.on_audit, store=h2.wrap_store(DictStore()) if wrapped else None)
            h2.attach(stand2)
            t0 = time.perf_counter()
            for wsid, e, nxt in plan:
                stand2.record(wsid, e, nxt)
            t1 = time.perf_counter()
            h2.flush(timeout=60)
            t2 = time.perf_counter()
            h2.close()
        finally:
            ev2.stop()
        lags.sort()
        return (len(lags), statistics.median(lags), lags[int(len(lags) * 0.95) - 1], lags[-1],
                len(plan), (t1 - t0) * 1e3, (t2 - t0) * 1e3)
    finally:
        ev.stop()


def main():
    tmp = tempfile.mkdtemp(prefix="evident-chap-bench-")
    try:
        for wrapped in (False, True):
            how = "with h.wrap_store(DictStore())" if wrapped else "without a wrapped store"
            print(f"-- {how}")
            best, med, save_us = bench_on_audit(tmp, wrapped=wrapped)
            print(f"on_audit: {best:.2f} µs/op best of 5 × 100,000 calls (median run {med:.2f} µs/op)")
            if save_us is not None:
                print(f"the wrapper's save around a store doing nothing: {save_us:.2f} µs/op best of 5 × 100,000")
            n, p50, p95, mx, nb, feed_ms, burst_ms = bench_lag(tmp, wrapped=wrapped)
            print(f"lag record (on_audit{', save' if wrapped else ''}) -> acknowledged + evidence head, one entry "
                  f"at a time ({n} entries): median {p50:.1f} ms, p95 {p95:.1f} ms, max {mx:.1f} ms")
            print(f"burst of {nb} entries: records {feed_ms:.1f} ms, all acknowledged after {burst_ms:.1f} ms")
    finally:
        shutil.rmtree(tmp, True)


if __name__ == "__main__":
    main()
