// The hooks against a real evidentd on loopback, driven as the reference Coordinator drives them,
// with the audit logs the reference Coordinators wrote (testvectors/chap-reference/).
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import canonicalize from "canonicalize";
import { decode } from "cbor2";
import type { AuditEntry } from "../src/index.ts";
import { Evidentd, journeys, Proxy, readJourney, StandIn, tmpDir, harness, recorder } from "./helpers.ts";
import { flip, positions } from "./tamper.ts";

const { cleanups, evidentd, hooks } = harness();

const recordOf = (e: AuditEntry) => (e.envelope !== undefined ? e.envelope : { outcome: e.outcome, request: e.request });

/** Every entry of the workspace is in evidentd exactly once, in seq order, the same record. */
async function assertHolds(d: Evidentd, si: StandIn) {
  const got = await d.entries(si.ws.id);
  assert.equal(got.length, si.ws.audit.length, `${si.ws.id}: entries`);
  got.forEach((g, i) => {
    assert.equal(g.seq, i);
    assert.equal(canonicalize(g.record), canonicalize(recordOf(si.ws.audit[i])), `${si.ws.id} seq ${i}`);
  });
  const c = await d.chain(si.ws.id);
  assert.equal(c?.size, si.ws.audit.length);
  if (si.ws.audit[0].prev_hash != null) assert.equal(c?.head, si.ws.chain_head, `${si.ws.id}: evidentd's head is the Coordinator's chain_head`);
}

for (const source of ["ts", "py", "live-ts", "live-py"]) {
  test(`${source}: every journey reaches evidentd once, heads agree, every receipt verifies and tampering is refused`, async () => {
    const d = await evidentd();
    const trust = await d.trust();
    const { logger, lines } = recorder();
    const spoolDir = tmpDir("spool");
    const h = hooks({ url: d.url, trust, spoolDir, logger });
    const stands: StandIn[] = [];
    for (const name of journeys(source)) {
      const j = readJourney(source, name);
      const si = new StandIn(j.workspace, h);
      for (const e of j.entries) si.record(e);
      stands.push(si);
    }
    await h.flush();
    for (const si of stands) await assertHolds(d, si);
    // the Coordinator's heads were reported and kept (a refused report is logged at warn)
    assert.deepEqual(lines.filter((l) => l.level !== "info"), []);
    for (const si of stands) {
      const res = si.submit();
      assert.equal(res.error, undefined, `${si.ws.id}: ${res.error?.message}`);
      assert.equal(res.result!.receipts.length, si.ws.audit.length);
      for (const { seq, receipt } of res.result!.receipts) {
        assert.equal(receipt.seq, seq);
        assert.equal(receipt.chain, si.ws.id);
        assert.deepEqual(si.verify(receipt), { result: { verified: true } }, `${si.ws.id} seq ${seq}`);
      }
      // a second submission of a range hands out the same seqs
      const again = si.submit(1, 3);
      assert.deepEqual(again.result!.receipts.map((r) => r.seq), [1, 2]);
      // tampering: sampled bytes of statement, seal and checkpoint of the first and last receipt
      for (const { receipt } of [res.result!.receipts[0], res.result!.receipts.at(-1)!]) {
        for (const m of ["statement", "seal", "checkpoint"] as const) {
          const n = m === "checkpoint" ? Buffer.byteLength(receipt.checkpoint as string) : Buffer.from(receipt[m] as string, "base64").length;
          for (const i of positions(n, 12)) {
            assert.ok(si.verify(flip(receipt, m, i)).error, `${si.ws.id} ${m} byte ${i} flipped still verifies`);
          }
        }
      }
    }
    assert.equal(fs.readdirSync(spoolDir).filter((f) => f.endsWith(".jsonl") && fs.statSync(path.join(spoolDir, f)).size > 0).length, 0, "the spool is emptied once acknowledged");
  });
}

test("evidentd killed mid-stream and restarted on its data dir: nothing lost, nothing twice", async () => {
  const dataDir = tmpDir("data");
  let d = await evidentd(dataDir);
  const proxy = await new Proxy().start();
  cleanups.push(() => proxy.close());
  await proxy.to(d.url);
  const trust = await d.trust();
  const { logger } = recorder();
  const h = hooks({ url: proxy.url, trust, spoolDir: tmpDir("spool"), logger });
  const j = readJourney("ts", "profiles");
  const si = new StandIn(j.workspace, h);
  const half = 30;
  for (const e of j.entries.slice(0, half)) si.record(e);
  await new Promise((r) => setTimeout(r, 30)); // some of it is on its way
  await d.kill();
  await proxy.to(undefined);
  for (const e of j.entries.slice(half)) si.record(e);
  await new Promise((r) => setTimeout(r, 400)); // the worker retries against nothing
  d = await evidentd(dataDir);
  await proxy.to(d.url);
  await h.flush();
  await assertHolds(d, si);
  const res = si.submit();
  assert.equal(res.error, undefined, res.error?.message);
  for (const { receipt } of res.result!.receipts) assert.ok(si.verify(receipt).result);
});

test("adapter restart: a new evidentHooks on the same spool resumes without duplicates, and fills gaps from workspace.audit", async () => {
  const d = await evidentd();
  const proxy = await new Proxy().start();
  cleanups.push(() => proxy.close());
  const trust = await d.trust();
  const spoolDir = tmpDir("spool");
  const j = readJourney("py", "full");
  // 1: entries 0..19 acknowledged; 20..39 spooled while evidentd is unreachable; then the adapter stops
  await proxy.to(d.url);
  const a = hooks({ url: proxy.url, trust, spoolDir, logger: recorder().logger, closeFlushMs: 300 });
  const si = new StandIn(j.workspace, a);
  for (const e of j.entries.slice(0, 20)) si.record(e);
  await a.flush();
  await proxy.to(undefined);
  for (const e of j.entries.slice(20, 40)) si.record(e);
  await a.close();
  assert.equal((await d.chain(si.ws.id))?.size, 20);
  // 2: entries 40..49 reach the Coordinator's log but no adapter (the process died before the spool)
  si.listeners = [];
  for (const e of j.entries.slice(40, 50)) si.record(e);
  // 3: a new adapter on the same spool: resumes 20..39 from the spool, 40..49 from ws.audit
  await proxy.to(d.url);
  const b = hooks({ url: proxy.url, trust, spoolDir, logger: recorder().logger });
  si.hooks = b;
  si.listeners = [b.onAudit];
  for (const e of j.entries.slice(50)) si.record(e);
  await b.flush();
  await assertHolds(d, si);
  // the index survived the restart: receipts for entries the first adapter indexed
  const res = si.submit(0, si.ws.audit.length);
  assert.equal(res.error, undefined, res.error?.message);
  assert.equal(res.result!.receipts.length, si.ws.audit.length);
});

test("a refused entry: the submitter returns null (-32081), refused.jsonl keeps it, flush rejects", async () => {
  const d = await evidentd();
  const trust = await d.trust();
  const spoolDir = tmpDir("spool");
  const { logger, lines } = recorder();
  const h = hooks({ url: d.url, trust, spoolDir, logger, refusedRetryMs: 200 });
  const j = readJourney("ts", "small");
  const bad = 4;
  const entries = j.entries.map((e) => JSON.parse(JSON.stringify(e)) as AuditEntry);
  const env = entries[bad].envelope as { sig: string };
  const sig = Buffer.from(env.sig.split(":")[2], "base64");
  sig[5] ^= 1;
  env.sig = env.sig.split(":").slice(0, 2).join(":") + ":" + sig.toString("base64");
  const si = new StandIn(j.workspace, h);
  for (const e of entries) si.record(e);
  await assert.rejects(h.flush(), /refused .* seq 4: bad_signature/);
  assert.equal((await d.chain(si.ws.id))?.size, bad, "the entries before it are stored");
  const ok = si.submit(0, bad);
  assert.equal(ok.error, undefined);
  assert.deepEqual(si.submit(bad, bad + 1), { error: { code: -32081, message: `Statement rejected at seq ${bad}` } });
  await new Promise((r) => setTimeout(r, 700)); // retried, refused again: logged and kept once
  const refused = fs.readFileSync(path.join(spoolDir, "refused.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
  assert.equal(refused.length, 1);
  assert.equal(refused[0].workspace, si.ws.id);
  assert.equal(refused[0].seq, bad);
  assert.equal(refused[0].problem.code, "bad_signature");
  assert.deepEqual(refused[0].entry.envelope, entries[bad].envelope);
  assert.equal(lines.filter((l) => l.level === "error").length, 1);
});

test("no trust file: verifyScittReceipt throws (-32082); onAudit never throws", async () => {
  const h = hooks({ url: "http://127.0.0.1:9", spoolDir: tmpDir("spool"), logger: recorder().logger });
  const si = new StandIn("wsp_x", h);
  assert.equal(si.verify({ format: "evident-entry-receipt/v1" }).error?.code, -32082);
  const circular: Record<string, unknown> = {};
  circular.self = circular;
  assert.doesNotThrow(() => h.onAudit(si.ws, { seq: 0, arrived: "x", envelope: circular }));
});

test("CHAP 0.3: a refused call recorded without an envelope gets a receipt of {outcome, request} under content type 0.3", async () => {
  const d = await evidentd();
  const trust = await d.trust();
  const h = hooks({ url: d.url, trust, spoolDir: tmpDir("spool") });
  const j = readJourney("ts", "small");
  const si = new StandIn(j.workspace, h);
  for (const e of j.entries) si.record(e);
  const refusal = {
    outcome: { status: "refused", code: -32011 },
    request: { jsonrpc: "2.0", id: "r-ünïcode-1", method: "control.pause",
      params: { workspace: j.workspace, from: "human:mallory@example.org", reason: "höld ✋" } },
  };
  si.record({ seq: si.ws.audit.length, arrived: "2026-05-17T09:30:00.000Z", ...refusal, prev_hash: "chained" } as AuditEntry);
  await h.flush();
  await assertHolds(d, si);
  const statement = StandIn.buildStatement(j.workspace, refusal, "service:coordinator");
  (statement.protected as Record<string, unknown>)["content-type"] = "application/chap+json;version=0.3";
  const receipt = h.scittSubmitter(statement);
  assert.ok(receipt, "a receipt for the refusal");
  assert.equal(receipt.seq, si.ws.audit.length - 1);
  assert.deepEqual(si.verify(receipt), { result: { verified: true } });
  const sign1 = decode(Buffer.from(receipt.statement as string, "base64")) as { contents: [Uint8Array, unknown, Uint8Array, Uint8Array] };
  const [protectedBytes, , payload] = sign1.contents;
  assert.equal(Buffer.from(payload).toString("utf8"), canonicalize(refusal));
  assert.equal((decode(protectedBytes) as Map<number, unknown>).get(3), "application/chap+json;version=0.3");
});
