// onAudit's cost on the Coordinator's dispatch path, and the lag from onAudit to evidentd's
// acknowledgement. Needs a real evidentd (built from this repository, or EVIDENTD_BIN).
//   npm run bench                      (N=100000; BENCH_N=… to change)
//   BENCH_STORE=sync npm run bench     with h.wrapStore around a store whose save returns at once
//   BENCH_STORE=async npm run bench    … whose save returns a resolved Promise
// With a store, each call is followed by the Coordinator's persist(): store.save({id, data, …}),
// data.audit the live array; the store itself does nothing, so the figure is the adapter's part.
import { performance } from "node:perf_hooks";
import { evidentHooks, type AuditEntry, type Store, type WorkspaceRecord } from "../src/index.ts";
import { Evidentd, linkHash, readJourney, removeTmpDirs, tmpDir, ZERO_HASH } from "../test/helpers.ts";

const N = Number(process.env.BENCH_N ?? 100_000);
const mode = process.env.BENCH_STORE ?? "none";
const d = await new Evidentd(tmpDir("bench-data")).start();
const h = evidentHooks({ url: d.url, spoolDir: tmpDir("bench-spool") });
const inner: Store = {
  load: () => [],
  save: mode === "async" ? (_r: WorkspaceRecord) => Promise.resolve() : (_r: WorkspaceRecord) => {},
  delete: () => {},
};
const store = mode === "none" ? undefined : h.wrapStore(inner);
let version = 0;
const persist = (ws: { id: string; audit: AuditEntry[]; chain_head: string | null }) => {
  if (!store) return;
  const r = store.save({ id: ws.id, data: { id: ws.id, audit: ws.audit, chain_head: ws.chain_head }, version: ++version, updated_at: "" });
  if (r instanceof Promise) r.catch(() => {});
};

// N entries shaped like the reference Coordinator's: envelopes of the profiles journey, unsigned
// (the chain is a fresh workspace per envelope, so evidentd accepts them as they come), chained.
const tpl = readJourney("ts", "profiles").entries.map((e) => e.envelope as Record<string, unknown>);
const ws = { id: "wsp_bench", audit: [] as AuditEntry[], chain_head: null as string | null };
const entries: AuditEntry[] = [];
let head = ZERO_HASH;
for (let i = 0; i < N; i++) {
  const t = tpl[i % tpl.length] as { params: Record<string, unknown> };
  const envelope = { jsonrpc: "2.0", id: `bench-${i}`, method: "message.post", params: { workspace: ws.id, from: "agent:bench", ts: new Date(1_700_000_000_000 + i).toISOString(), body: { text: JSON.stringify(t.params).slice(0, 300) } } };
  const e: AuditEntry = { seq: i, arrived: new Date(1_700_000_000_000 + i).toISOString(), envelope, prev_hash: head };
  head = linkHash(envelope, head);
  entries.push(e);
}
const heads: string[] = [];
{ let hh = ZERO_HASH; for (const e of entries) { hh = linkHash(e.envelope, hh); heads.push(hh); } }
const bytes = entries.reduce((n, e) => n + JSON.stringify(e).length, 0);

// 0. the wrapper's own cost: save() alone, wrapped and not, on a workspace of its own
if (store) {
  const audit: unknown[] = [];
  for (const [name, st] of [["inner", inner], ["wrapped", store], ["inner", inner], ["wrapped", store]] as const) {
    const s0 = performance.now();
    for (let i = 0; i < N; i++) {
      audit.push(i);
      const r = st.save({ id: "wsp_bench_save", data: { id: "wsp_bench_save", audit }, version: i, updated_at: "" });
      if (r instanceof Promise) r.catch(() => {});
    }
    const s1 = performance.now();
    console.log(`save() alone, ${name}: ${((s1 - s0) * 1e6 / N).toFixed(0)} ns/op`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// 1. onAudit per call, as the Coordinator calls it (push, head update, listener)
const t0 = performance.now();
for (let i = 0; i < N; i++) {
  ws.audit.push(entries[i]);
  ws.chain_head = heads[i];
  h.onAudit(ws, entries[i]);
  persist(ws);
}
const t1 = performance.now();
await h.flush();
const t2 = performance.now();
const c = await d.chain(ws.id);
console.log(`entries ${N}, mean entry ${Math.round(bytes / N)} bytes JSON, store: ${mode === "none" ? "none" : `wrapped (${mode} save)`}`);
console.log(`onAudit${store ? " + wrapped save" : ""}: ${((t1 - t0) * 1e6 / N).toFixed(0)} ns/op (${(t1 - t0).toFixed(0)} ms for ${N})`);
console.log(`throughput to evidentd: ${(N / ((t2 - t0) / 1000)).toFixed(0)} entries/s (all ${N} acknowledged ${(t2 - t0).toFixed(0)} ms after the first onAudit); evidentd size ${c?.size}, head agrees: ${c?.head === ws.chain_head}`);

// 2. lag: one entry at a time, onAudit → acknowledged (flush resolves), at a steady trickle
const lags: number[] = [];
for (let i = 0; i < 200; i++) {
  const seq = ws.audit.length;
  const envelope = { jsonrpc: "2.0", id: `lag-${i}`, method: "message.post", params: { workspace: ws.id, from: "agent:bench", ts: new Date(1_800_000_000_000 + i).toISOString(), body: { text: "x" } } };
  const e: AuditEntry = { seq, arrived: new Date().toISOString(), envelope, prev_hash: ws.chain_head! };
  ws.audit.push(e);
  ws.chain_head = linkHash(envelope, ws.chain_head!);
  const s = performance.now();
  h.onAudit(ws, e);
  persist(ws);
  await h.flush();
  lags.push(performance.now() - s);
  await new Promise((r) => setTimeout(r, 5));
}
lags.sort((a, b) => a - b);
const q = (p: number) => lags[Math.min(lags.length - 1, Math.floor(p * lags.length))].toFixed(2);
console.log(`lag onAudit → acknowledged by evidentd (spool fsync + POST + evidence head), 200 single entries: p50 ${q(0.5)} ms, p90 ${q(0.9)} ms, p99 ${q(0.99)} ms`);
await h.close();
await d.stop();
removeTmpDirs();
