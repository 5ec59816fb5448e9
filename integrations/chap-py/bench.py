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

from tests.harness import Evidentd, StandIn, feed_plan, load_journey  # noqa: E402
from evident_chap import evident_hooks  # noqa: E402

logging.getLogger("evident_chap").setLevel(logging.CRITICAL)


def bench_on_audit(tmp, n=100_000):
    ev = Evidentd(os.path.join(tmp, "data-a")).start()
    try:
        entries, final = load_journey("live-py", "profiles")
        h = evident_hooks(url=ev.url, spool_dir=os.path.join(tmp, "spool-a"))
        stand = StandIn(h.on_audit)
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
        h.close(timeout=0.1)  # the repeated seq 0 is a duplicate: nothing to wait for
        return min(best), statistics.median(best)
    finally:
        ev.stop()


def bench_lag(tmp):
    ev = Evidentd(os.path.join(tmp, "data-b")).start()
    try:
        js = {j: load_journey("live-py", j) for j in ("burst", "profiles")}
        h = evident_hooks(url=ev.url, spool_dir=os.path.join(tmp, "spool-b"))
        stand = StandIn(h.on_audit)
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
        ev2 = Evidentd(os.path.join(tmp, "data-c")).start()
        try:
            h2 = evident_hooks(url=ev2.url, spool_dir=os.path.join(tmp, "spool-c"))
            stand2 = StandIn(h2.on_audit)
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
        best, med = bench_on_audit(tmp)
        print(f"on_audit: {best:.2f} µs/op best of 5 × 100,000 calls (median run {med:.2f} µs/op)")
        n, p50, p95, mx, nb, feed_ms, burst_ms = bench_lag(tmp)
        print(f"lag on_audit -> acknowledged + evidence head, one entry at a time ({n} entries): "
              f"median {p50:.1f} ms, p95 {p95:.1f} ms, max {mx:.1f} ms")
        print(f"burst of {nb} entries: on_audit calls {feed_ms:.1f} ms, all acknowledged after {burst_ms:.1f} ms")
    finally:
        shutil.rmtree(tmp, True)


if __name__ == "__main__":
    main()
