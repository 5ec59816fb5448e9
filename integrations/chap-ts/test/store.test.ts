// h.wrapStore: entries reach evidentd only once the Coordinator's store saved them; a crash
// between the listener and the save; evidentd holding another record than the Coordinator.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import canonicalize from "canonicalize";
import type { AuditEntry } from "../src/index.ts";
import { Evidentd, Proxy, readJourney, StandIn, TestStore, tmpDir, harness, recorder } from "./helpers.ts";

const { cleanups, evidentd, hooks } = harness();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const recordOf = (e: AuditEntry) => (e.envelope !== undefined ? e.envelope : { outcome: e.outcome, request: e.request });
const size = async (d: Evidentd, ws: string) => (await d.chain(ws))?.size ?? 0;
async function until(what: string, f: () => Promise<boolean> | boolean, ms = 10000) {
  const deadline = Date.now() + ms;
  while (!(await Promise.resolve().then(f).catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** evidentd holds exactly the Coordinator's log: records, and the arrival of each entry in its meta. */
async function assertExactly(d: Evidentd, si: StandIn) {
  const got = await d.entries(si.ws.id);
  assert.equal(got.length, si.ws.audit.length, `${si.ws.id}: entries`);
  got.forEach((g, i) => {
    const mine = si.ws.audit[i];
    assert.equal(g.seq, i);
    assert.equal(canonicalize(g.record), canonicalize(recordOf(mine)), `${si.ws.id} seq ${i}: record`);
    assert.equal(g.meta?.arrived, mine.arrived, `${si.ws.id} seq ${i}: arrived`);
  });
  const c = await d.chain(si.ws.id);
  if (si.ws.audit[0].prev_hash != null) assert.equal(c?.head, si.ws.chain_head, `${si.ws.id}: evidentd's head is the Coordinator's chain_head`);
}

const spoolLines = (spoolDir: string, ws: string) => {
  const f = path.join(spoolDir, `ws-${Buffer.from(ws, "utf8").toString("base64url")}.jsonl`);
  return fs.readFileSync(f, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as { s?: number; u?: number; r?: number; e?: AuditEntry });
};
const refusedLines = (spoolDir: string) => {
  const f = path.join(spoolDir, "refused.jsonl");
  return fs.existsSync(f) ? fs.readFileSync(f, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Record<string, unknown>) : [];
};

test("wrapped store: an entry reaches evidentd only after a save holding it completed; a failed save releases nothing; flush waits for saves in flight", async () => {
  const d = await evidentd();
  const spoolDir = tmpDir("spool");
  const { logger, lines } = recorder();
  const h = hooks({ url: d.url, trust: await d.trust(), spoolDir, logger });
  const store = new TestStore();
  store.mode = "held";
  const j = readJourney("ts", "full");
  const si = new StandIn(j.workspace, h, h.wrapStore(store));
  for (const e of j.entries.slice(0, 10)) si.record(e);
  await sleep(300); // far beyond the adapter's lag (~10 ms)
  assert.equal(await size(d, si.ws.id), 0, "nothing before its save");
  assert.equal(store.held.length, 10);
  // spooled at once, marked unsaved
  await until("spooled", () => spoolLines(spoolDir, si.ws.id).filter((l) => l.u === 1).length === 10);

  // saves 1..5 (holding 1..5 entries) complete, in order
  for (const s of store.held.slice(0, 5)) s.resolve();
  await until("5 entries in evidentd", async () => (await size(d, si.ws.id)) === 5);
  await sleep(300);
  assert.equal(await size(d, si.ws.id), 5, "nothing beyond the last completed save");

  // the 6th save fails (the Coordinator swallows it): nothing released
  store.held[5].reject(new Error("disk full"));
  await sleep(300);
  assert.equal(await size(d, si.ws.id), 5, "a failed save releases nothing");

  // flush waits for the saves in flight (7..10), and the 10th save carries the 6th entry too
  let flushed = false;
  const f = h.flush().then(() => { flushed = true; });
  await sleep(300);
  assert.equal(flushed, false, "flush waits for the saves in flight");
  assert.equal(await size(d, si.ws.id), 5);
  for (const s of store.held.slice(6, 10)) s.resolve();
  await f;
  assert.equal(await size(d, si.ws.id), 10);

  // a save that throws: the entry is not persisted, flush does not wait for it, nothing is sent
  store.mode = "throw";
  si.record(j.entries[10]);
  await h.flush();
  await sleep(200);
  assert.equal(await size(d, si.ws.id), 10, "a throwing save releases nothing");
  // a later save holds it: both go
  store.mode = "sync";
  si.record(j.entries[11]);
  await h.flush();
  assert.equal(await size(d, si.ws.id), 12);
  // completed saves out of order: the later count wins, the earlier changes nothing
  store.mode = "held";
  for (const e of j.entries.slice(12, 15)) si.record(e);
  const [a, b, c] = store.held.slice(-3);
  c.resolve();
  await until("15 entries", async () => (await size(d, si.ws.id)) === 15);
  a.resolve(); b.resolve();
  await h.flush();
  await assertExactly(d, si);
  // receipts still come (the entries were saved)
  const res = si.submit();
  assert.equal(res.error, undefined, res.error?.message);
  assert.equal(res.result!.receipts.length, 15);
  assert.deepEqual(lines.filter((l) => l.level !== "info"), []);
  assert.deepEqual(refusedLines(spoolDir), []);
});

test("crash between the listener and the save: the restarted Coordinator's re-recorded seqs (other arrivals) are what evidentd holds", async () => {
  const d = await evidentd();
  const proxy = await new Proxy().start();
  cleanups.push(() => proxy.close());
  await proxy.to(d.url);
  const trust = await d.trust();
  const spoolDir = tmpDir("spool");
  const j = readJourney("py", "full");
  const k = 20;

  // 1: the first process: 0..14 saved and acknowledged; 15..19 saved while evidentd is unreachable
  // (released, spooled, not sent); seq 20 handed to the listener, its save never happens
  const a = hooks({ url: proxy.url, trust, spoolDir, logger: recorder().logger, closeFlushMs: 200 });
  const store1 = new TestStore();
  const si1 = new StandIn(j.workspace, a, a.wrapStore(store1));
  for (const e of j.entries.slice(0, k - 5)) si1.record(e);
  await a.flush();
  await proxy.to(undefined);
  for (const e of j.entries.slice(k - 5, k)) si1.record(e);
  store1.mode = "never";
  si1.record(j.entries[k]);
  await until("seq 20 spooled, unsaved", () => spoolLines(spoolDir, j.workspace).some((l) => l.s === k && l.u === 1));
  assert.equal(store1.saved.get(j.workspace), k, "the store holds 0..19");
  // the process dies: its worker stops (close gives up on the save that never completes)
  await a.close();
  assert.equal(await size(d, j.workspace), k - 5);

  // 2: the restarted Coordinator reloads 0..19 from its store; the client resends; seqs 20..22
  // are recorded with other arrivals than the first process's seq 20
  await proxy.to(d.url);
  const { logger, lines } = recorder();
  const b = hooks({ url: proxy.url, trust, spoolDir, logger });
  const store2 = new TestStore();
  const si2 = StandIn.reloaded(si1, k, b, b.wrapStore(store2));
  for (const e of j.entries.slice(k, k + 3)) {
    const later = { ...e, arrived: new Date(Date.parse(e.arrived) + 60_000).toISOString() };
    si2.record(later);
  }
  assert.notEqual(si2.ws.audit[k].arrived, si1.ws.audit[k].arrived);
  await b.flush();
  await assertExactly(d, si2);
  assert.deepEqual(refusedLines(spoolDir), [], "nothing diverges");
  assert.deepEqual(lines.filter((l) => l.level === "error" || l.level === "warn"), []);
  assert.ok(lines.some((l) => l.msg.includes("dropped spooled entries") && JSON.stringify(l.fields?.seqs) === `[${k}]`), "the unsaved seq 20 was dropped");
  const res = si2.submit();
  assert.equal(res.error, undefined, res.error?.message);
  assert.equal(res.result!.receipts.length, k + 3);
});

for (const kind of ["record", "arrived"] as const) {
  test(`evidentd holds another ${kind === "record" ? "record" : "arrival"} at a seq than the restarted Coordinator: reported in refused.jsonl`, async () => {
    const d = await evidentd();
    const trust = await d.trust();
    const spoolDir = tmpDir("spool");
    const j = readJourney("ts", "full");
    const n = 10;
    // a first process without a wrapped store ships 0..10; its store had saved 0..9 only
    const a = hooks({ url: d.url, trust, spoolDir, logger: recorder().logger });
    const si1 = new StandIn(j.workspace, a);
    for (const e of j.entries.slice(0, n + 1)) si1.record(e);
    await a.flush();
    await a.close();
    // the restarted Coordinator records seq 10 again: another call, or the resent one later
    const { logger, lines } = recorder();
    const b = hooks({ url: d.url, trust, spoolDir, logger });
    const si2 = StandIn.reloaded(si1, n, b);
    const again = kind === "record" ? j.entries[n + 1] : { ...j.entries[n], arrived: new Date(Date.parse(j.entries[n].arrived) + 500).toISOString() };
    si2.record(again);
    if (kind === "record") await assert.rejects(b.flush(), /another record .* seq 10/);
    else await b.flush();
    await until("refused.jsonl", () => refusedLines(spoolDir).length > 0);
    await sleep(200);
    const got = refusedLines(spoolDir);
    assert.equal(got.length, 1, JSON.stringify(got));
    assert.equal(got[0].workspace, j.workspace);
    assert.equal(got[0].seq, n);
    assert.equal(got[0].divergence, kind);
    assert.deepEqual((got[0].entry as AuditEntry).arrived, si2.ws.audit[n].arrived);
    assert.equal((got[0].evidentd as { arrived: string }).arrived, si1.ws.audit[n].arrived);
    assert.equal(lines.filter((l) => l.level === (kind === "record" ? "error" : "warn")).length, 1);
    assert.equal(await size(d, j.workspace), n + 1, "nothing more stored");
  });
}

test("a workspace.audit entry below evidentd's size that differs is found at first sight after a restart", async () => {
  const d = await evidentd();
  const trust = await d.trust();
  const spoolDir = tmpDir("spool");
  const j = readJourney("ts", "full");
  const a = hooks({ url: d.url, trust, spoolDir, logger: recorder().logger });
  const si1 = new StandIn(j.workspace, a);
  for (const e of j.entries.slice(0, 12)) si1.record(e);
  await a.flush();
  await a.close();
  // the reloaded log has another seq 11 (arrived differs) and the Coordinator appends seq 12
  const b = hooks({ url: d.url, trust, spoolDir, logger: recorder().logger });
  const si2 = StandIn.reloaded(si1, 12, b);
  si2.ws.audit[11].arrived = new Date(Date.parse(si2.ws.audit[11].arrived) + 1000).toISOString();
  si2.record(j.entries[12]);
  await b.flush();
  await until("refused.jsonl", () => refusedLines(spoolDir).length > 0);
  const got = refusedLines(spoolDir);
  assert.deepEqual(got.map((l) => [l.seq, l.divergence]), [[11, "arrived"]]);
  assert.equal(await size(d, j.workspace), 13);
});
