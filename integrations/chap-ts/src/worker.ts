// The worker thread: spool, send, resume, gap fill, evidence heads, receipts. All I/O of the
// adapter happens here; the hooks on the Coordinator's thread only post messages.
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { parentPort, workerData, type MessagePort } from "node:worker_threads";
import canonicalize from "canonicalize";
import type { FromWorker, SyncFromWorker, ToWorker, WorkerConfig } from "./protocol.ts";
import { receiptPayload } from "./receipt.ts";

const cfg = workerData as WorkerConfig;
const base = cfg.url.replace(/\/+$/, "");
const syncPort = cfg.syncPort as MessagePort;
const flag = new Int32Array(cfg.flag);

interface Pending { head: string | null; line: string }
interface Refusal { seq: number; code: string; detail: string; status: number; retryAt: number }
interface WS {
  id: string;
  name: string; // file name stem
  fd: number;
  spoolBytes: number;
  pending: Map<number, Pending>;
  remote?: number; // evidentd's size: every seq below it is held
  maxSeen: number; // highest seq handed to the worker
  reported: number; // audit_count last reported (0: none)
  reportCount?: number; // audit_count of the head to report next
  reportHead?: string;
  stopped?: Refusal;
  lastRefusedLogged?: string;
  sending: boolean;
  gapAsked?: string; // "from-to" asked and not answered
  coordinatorKnown: boolean; // the main thread holds the Workspace (gaps can be filled)
  batchCap?: number;
  index: Map<string, number[]>;
  cursor: Map<string, number>;
  indexFd: number;
  timer?: NodeJS.Timeout;
  /** with a wrapped store: every seq below it is in the Coordinator's store and may be sent */
  released: number;
  /** the Coordinator's entries at seqs evidentd already holds, to compare before treating them as done */
  toCheck: [number, string][];
  checking?: boolean; // a comparison is under way
  tailChecked: boolean; // the Coordinator's last entries below evidentd's size were asked for
  diverged?: number; // lowest seq at which evidentd holds another record than the Coordinator
  divergences: Set<string>; // "seq kind" reported
}

const workspaces = new Map<string, WS>();
const incoming: [WS, number, string | null, string][] = [];
let spoolScheduled = false;
let closing = false;
/** a wrapped store is in use: an entry is sent only once the Coordinator's store has saved it */
let gated = false;
/** how many of the Coordinator's entries below evidentd's size are compared after a (re)start */
const TAIL_CHECK = 16;
const MAX_CHECK = 2000;
const flushWaiters: { id: number; targets: Map<WS, number> }[] = [];

function send(m: FromWorker) { parentPort!.postMessage(m); }
function syncSend(m: SyncFromWorker) {
  syncPort.postMessage(m);
  Atomics.add(flag, 0, 1);
  Atomics.notify(flag, 0);
}
const log = (level: "info" | "warn" | "error", msg: string, fields?: Record<string, unknown>) => send({ t: "log", level, msg, fields });
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const jitter = (ms: number) => ms / 2 + Math.random() * ms / 2;

// ---- spool ------------------------------------------------------------------------------

fs.mkdirSync(cfg.spoolDir, { recursive: true });
const refusedFile = path.join(cfg.spoolDir, "refused.jsonl");

function stem(id: string) { return "ws-" + Buffer.from(id, "utf8").toString("base64url"); }

function wsFor(id: string): WS {
  let w = workspaces.get(id);
  if (w) return w;
  const name = stem(id);
  const file = path.join(cfg.spoolDir, name + ".jsonl");
  const ixFile = path.join(cfg.spoolDir, name + ".index");
  w = {
    id, name, fd: fs.openSync(file, "a+"), spoolBytes: 0, pending: new Map(), maxSeen: -1, reported: 0,
    sending: false, coordinatorKnown: false, index: new Map(), cursor: new Map(), indexFd: fs.openSync(ixFile, "a+"),
    released: 0, toCheck: [], tailChecked: false, divergences: new Set(),
  };
  // Reload what a previous run spooled and indexed. A line {"s","h","u":1,"e"} is an entry spooled
  // before the Coordinator's store saved it; a later {"r":n} line releases the seqs below n.
  const text = fs.readFileSync(file, "utf8");
  w.spoolBytes = Buffer.byteLength(text);
  const unreleased = new Set<number>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    try {
      const o = JSON.parse(line) as { s: number; h: string | null; e: unknown; u?: number; r?: number };
      if (typeof o.r === "number") {
        if (o.r > w.released) w.released = o.r;
        for (const s of unreleased) if (s < o.r) unreleased.delete(s);
        continue;
      }
      w.pending.set(o.s, { head: o.h, line: JSON.stringify(o.e) });
      if (o.u) unreleased.add(o.s); else unreleased.delete(o.s);
    } catch { /* a torn last line: its entry comes again from the Coordinator's log */ }
  }
  for (const line of fs.readFileSync(ixFile, "utf8").split("\n")) {
    const [s, h] = line.split(" ");
    if (h && /^[0-9]+$/.test(s)) addIndex(w, h, Number(s));
    else if (h && /^-[0-9]+$/.test(s)) removeIndex(w, h, -Number(s));
  }
  // Entries the previous run spooled and the store never saved: the Coordinator, restarted, may
  // have recorded those seqs again differently. Its log (workspace.audit, through the gap fill)
  // is the authority; these were never sent.
  if (unreleased.size > 0) {
    const tomb: string[] = [];
    for (const s of [...unreleased].sort((a, b) => a - b)) {
      try {
        const h = recordHash(JSON.parse(w.pending.get(s)!.line));
        if (removeIndex(w, h, s)) tomb.push(`-${s} ${h}\n`);
      } catch { /* not indexed */ }
      w.pending.delete(s);
    }
    if (tomb.length) { try { fs.writeSync(w.indexFd, tomb.join("")); } catch { /* the index keeps a stale seq */ } }
    log("info", "evident: dropped spooled entries the Coordinator's store never saved", { workspace: id, seqs: [...unreleased].sort((a, b) => a - b) });
  }
  for (const s of w.pending.keys()) if (s > w.maxSeen) w.maxSeen = s;
  workspaces.set(id, w);
  return w;
}

function removeIndex(w: WS, hash: string, seq: number): boolean {
  const l = w.index.get(hash);
  const i = l ? l.indexOf(seq) : -1;
  if (i < 0) return false;
  l!.splice(i, 1);
  if (l!.length === 0) w.index.delete(hash);
  return true;
}

/** A spool line; "u":1 marks an entry the Coordinator's store has not saved yet. */
function spoolLine(w: WS, seq: number, head: string | null, json: string): string {
  return `{"s":${seq},"h":${head === null ? "null" : JSON.stringify(head)}${gated && seq >= w.released ? ',"u":1' : ""},"e":${json}}\n`;
}

function addIndex(w: WS, hash: string, seq: number): boolean {
  const l = w.index.get(hash);
  if (!l) { w.index.set(hash, [seq]); return true; }
  if (l.includes(seq)) return false;
  l.push(seq);
  l.sort((a, b) => a - b);
  return true;
}

/** The record evidentd hashes and links: the envelope, or {outcome, request} for a recorded refusal. */
function recordHash(entry: Record<string, unknown>): string {
  const rec = entry.envelope !== undefined ? entry.envelope : { outcome: entry.outcome, request: entry.request };
  return createHash("sha256").update(canonicalize(rec) ?? "").digest("hex");
}

function enqueue(w: WS, seq: number, head: string | null, json: string) {
  if (seq > w.maxSeen) w.maxSeen = seq;
  incoming.push([w, seq, head, json]);
  if (!spoolScheduled) { spoolScheduled = true; setImmediate(spoolBatch); }
}

/** Writes everything queued to the spool, one fsync per file, then wakes the senders. */
function spoolBatch() {
  spoolScheduled = false;
  if (incoming.length === 0) return;
  const byWS = new Map<WS, { lines: string[]; ix: string[] }>();
  const check = new Set<WS>();
  for (const [w, seq, head, json] of incoming.splice(0)) {
    if (w.remote !== undefined && seq < w.remote) {
      // evidentd holds this seq already (shipped before a crash, or another writer): compare
      if (w.toCheck.length < MAX_CHECK) { w.toCheck.push([seq, json]); check.add(w); }
      continue;
    }
    if (w.pending.has(seq)) continue;
    let b = byWS.get(w);
    if (!b) byWS.set(w, (b = { lines: [], ix: [] }));
    b.lines.push(spoolLine(w, seq, head, json));
    w.pending.set(seq, { head, line: json });
    try {
      const h = recordHash(JSON.parse(json));
      if (addIndex(w, h, seq)) b.ix.push(`${seq} ${h}\n`);
    } catch (e) {
      log("error", "evident: cannot index an audit entry", { workspace: w.id, seq, error: String(e) });
    }
  }
  for (const [w, b] of byWS) {
    try {
      const data = b.lines.join("");
      fs.writeSync(w.fd, data);
      w.spoolBytes += Buffer.byteLength(data);
      if (b.ix.length) fs.writeSync(w.indexFd, b.ix.join(""));
      fs.fsyncSync(w.fd);
      if (b.ix.length) fs.fsyncSync(w.indexFd);
    } catch (e) {
      log("error", "evident: spool write failed", { workspace: w.id, error: String(e) });
    }
    pump(w);
  }
  for (const w of check) if (!byWS.has(w)) pump(w);
}

/** The Coordinator's store saved workspace w with n entries: the seqs below n may be sent. */
function release(w: WS, n: number) {
  if (n <= w.released) return;
  w.released = n;
  // not fsynced: a lost marker only means the entries come again from workspace.audit
  const line = `{"r":${n}}\n`;
  try { fs.writeSync(w.fd, line); w.spoolBytes += line.length; } catch (e) {
    log("warn", "evident: spool write failed", { workspace: w.id, error: String(e) });
  }
  pump(w);
}

/** Drops acknowledged entries; empties or rewrites the spool file when that frees enough. */
function compact(w: WS) {
  if (w.remote === undefined) return;
  for (const s of [...w.pending.keys()]) if (s < w.remote) w.pending.delete(s);
  try {
    if (w.pending.size === 0) {
      if (w.spoolBytes > 0) { fs.ftruncateSync(w.fd, 0); fs.fsyncSync(w.fd); w.spoolBytes = 0; }
    } else if (w.spoolBytes > 4 << 20) {
      const file = path.join(cfg.spoolDir, w.name + ".jsonl");
      const tmp = file + ".tmp";
      const data = [...w.pending].sort((a, b) => a[0] - b[0])
        .map(([s, p]) => spoolLine(w, s, p.head, p.line)).join("");
      const fd = fs.openSync(tmp, "w");
      fs.writeSync(fd, data); fs.fsyncSync(fd); fs.closeSync(fd);
      fs.renameSync(tmp, file);
      fs.closeSync(w.fd);
      w.fd = fs.openSync(file, "a+");
      w.spoolBytes = Buffer.byteLength(data);
    }
  } catch (e) {
    log("warn", "evident: spool compaction failed", { workspace: w.id, error: String(e) });
  }
}

// ---- HTTP ---------------------------------------------------------------------------------

class Unreachable extends Error {}
interface Answer { status: number; body: unknown; retryAfter?: number }

async function http(method: string, p: string, body?: string, type?: string, timeoutMs = 30000): Promise<Answer> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (cfg.token) headers.authorization = `Bearer ${cfg.token}`;
  if (type) headers["content-type"] = type;
  let res: Response;
  try {
    res = await fetch(base + p, { method, headers, body, signal: AbortSignal.timeout(timeoutMs) });
  } catch (e) {
    throw new Unreachable(`${method} ${p}: ${(e as Error).message}`);
  }
  let text: string;
  try { text = await res.text(); } catch (e) { throw new Unreachable(`${method} ${p}: ${(e as Error).message}`); }
  let parsed: unknown = undefined;
  try { parsed = text === "" ? undefined : JSON.parse(text); } catch { parsed = text; }
  const ra = Number(res.headers.get("retry-after"));
  return { status: res.status, body: parsed, retryAfter: Number.isFinite(ra) && ra > 0 ? ra : undefined };
}

const chainPath = (w: WS) => `/v1/chains/${encodeURIComponent(w.id)}`;
const problem = (a: Answer) => (typeof a.body === "object" && a.body !== null ? a.body as Record<string, unknown> : {});
const transient = (a: Answer) => a.status >= 500 || a.status === 429;

// ---- sending ------------------------------------------------------------------------------

async function backoff(w: WS, attempt: number, retryAfter?: number) {
  const ms = Math.min(cfg.backoffMinMs * 2 ** attempt, cfg.backoffMaxMs);
  await sleep(Math.max(jitter(ms), Math.min((retryAfter ?? 0) * 1000, cfg.backoffMaxMs)));
}

/** Sends a workspace's entries in seq order until it is caught up, stopped or waiting for a gap. */
async function pump(w: WS) {
  if (w.sending || closing) return;
  w.sending = true;
  let attempt = 0;
  try {
    for (;;) {
      if (closing) return;
      if (w.remote === undefined) {
        const a = await http("GET", chainPath(w)).catch((e: Error) => e);
        if (a instanceof Error || transient(a)) { await backoff(w, attempt++, a instanceof Error ? undefined : a.retryAfter); continue; }
        if (a.status === 404) { w.remote = 0; w.tailChecked = true; }
        else if (a.status === 200 && typeof (a.body as { size?: unknown }).size === "number") w.remote = (a.body as { size: number }).size;
        else { log("error", "evident: cannot read the chain's size", { workspace: w.id, status: a.status }); await backoff(w, attempt++); continue; }
        attempt = 0;
        // spooled entries evidentd turns out to hold: compared before they are dropped as done
        for (const [s, p] of w.pending) if (s < w.remote) w.toCheck.push([s, p.line]);
        if (w.toCheck.length > MAX_CHECK) w.toCheck = w.toCheck.sort((a, b) => a[0] - b[0]).slice(-MAX_CHECK);
        compact(w);
      }
      if (!w.tailChecked && w.coordinatorKnown && w.remote > 0) {
        // the Coordinator's last entries below evidentd's size, from its (reloaded) log
        w.tailChecked = true;
        syncSend({ t: "needCheck", ws: w.id, from: Math.max(0, w.remote - TAIL_CHECK), to: w.remote });
      }
      if (w.toCheck.length > 0) {
        const items = w.toCheck.splice(0);
        w.checking = true;
        const rest = await checkHeld(w, items).finally(() => { w.checking = false; });
        if (rest.length > 0) { w.toCheck.unshift(...rest); await backoff(w, attempt++); continue; }
        attempt = 0;
      }
      if (w.stopped) {
        if (Date.now() < w.stopped.retryAt) return;
        log("info", "evident: retrying a refused entry", { workspace: w.id, seq: w.stopped.seq });
      }
      if (w.reportCount !== undefined && w.reportCount > w.reported) {
        const ok = await reportHead(w, attempt);
        if (!ok) { attempt++; continue; }
        attempt = 0;
      }
      const next = w.remote!;
      if (!w.pending.has(next)) {
        if (w.maxSeen >= next) { askGap(w, next); return; }
        settle();
        return;
      }
      // with a wrapped store, nothing the Coordinator's store has not saved yet
      const limit = gated ? w.released : Infinity;
      if (next >= limit) { settle(); return; }
      const batch: number[] = [];
      let bytes = 0;
      const cap = Math.min(w.batchCap ?? cfg.maxBatch, cfg.maxBatch);
      for (let s = next; s < limit && w.pending.has(s) && batch.length < cap && bytes < 8 << 20; s++) {
        batch.push(s);
        bytes += w.pending.get(s)!.line.length + 1;
      }
      const body = batch.map((s) => w.pending.get(s)!.line).join("\n") + "\n";
      const a = await http("POST", `${chainPath(w)}/entries?profile=chap/0.3`, body, "application/jsonl").catch((e: Error) => e);
      if (a instanceof Error || transient(a)) {
        if (attempt >= 3) log("warn", "evident: evidentd not reachable, retrying", { workspace: w.id, error: a instanceof Error ? a.message : a.status });
        await backoff(w, attempt++, a instanceof Error ? undefined : a.retryAfter);
        continue;
      }
      attempt = 0;
      if (a.status === 200 || a.status === 201) {
        const size = (a.body as { size?: unknown }).size;
        const last = batch[batch.length - 1];
        w.remote = Math.max(w.remote!, typeof size === "number" ? size : last + 1, last + 1);
        w.batchCap = undefined;
        if (w.stopped) { log("info", "evident: a refused entry went through", { workspace: w.id, seq: w.stopped.seq }); w.stopped = undefined; }
        // the Coordinator's head after the batch's last entry
        const held = w.remote! - 1;
        const h = w.pending.get(held)?.head ?? (held === last ? w.pending.get(last)?.head : undefined);
        if (h) { w.reportCount = held + 1; w.reportHead = h; }
        compact(w);
        continue;
      }
      // a refusal: the batch is atomic, so the records before the refused one go alone first
      const pr = problem(a);
      const idx = typeof pr.index === "number" ? pr.index : undefined;
      if (idx !== undefined && idx > 0 && idx < batch.length) { w.batchCap = idx; continue; }
      if (idx === undefined && batch.length > 1) { w.batchCap = 1; continue; }
      const seq = batch[idx ?? 0];
      refuse(w, seq, a);
      return;
    }
  } finally {
    w.sending = false;
    // entries to compare that came in while this loop was past its comparison step
    if (w.toCheck.length > 0 && !closing) setImmediate(() => pump(w));
    settle();
  }
}

async function reportHead(w: WS, attempt: number): Promise<boolean> {
  const body = JSON.stringify({ evidence_head: w.reportHead, audit_count: w.reportCount });
  const a = await http("POST", `${chainPath(w)}/evidence-head`, body, "application/json").catch((e: Error) => e);
  if (a instanceof Error || transient(a)) { await backoff(w, attempt, a instanceof Error ? undefined : a.retryAfter); return false; }
  if (a.status >= 400) {
    const pr = problem(a);
    log("warn", "evident: evidentd did not keep the Coordinator's head", { workspace: w.id, audit_count: w.reportCount, status: a.status, code: pr.code, detail: pr.detail });
  }
  w.reported = w.reportCount!;
  return true;
}

function refuse(w: WS, seq: number, a: Answer) {
  const pr = problem(a);
  const code = String(pr.code ?? a.status), detail = String(pr.detail ?? pr.title ?? "");
  w.stopped = { seq, code, detail, status: a.status, retryAt: Date.now() + cfg.refusedRetryMs };
  w.batchCap = undefined;
  const key = `${seq} ${code} ${detail}`;
  if (w.lastRefusedLogged !== key) {
    w.lastRefusedLogged = key;
    log("error", "evident: evidentd refused an audit entry; the workspace's sending is stopped", { workspace: w.id, seq, status: a.status, code, detail });
    let entry: unknown = null;
    try { entry = JSON.parse(w.pending.get(seq)!.line); } catch { /* kept as null */ }
    try {
      fs.appendFileSync(refusedFile, JSON.stringify({ workspace: w.id, seq, at: new Date().toISOString(), status: a.status, problem: pr, entry }) + "\n");
    } catch (e) { log("error", "evident: cannot write refused.jsonl", { error: String(e) }); }
  }
  clearTimeout(w.timer);
  w.timer = setTimeout(() => pump(w), cfg.refusedRetryMs);
  w.timer.unref?.();
}

/** Compares the Coordinator's entries at seqs evidentd holds with evidentd's; answers the items it
 * could not compare yet (evidentd unreachable). */
async function checkHeld(w: WS, items: [number, string][]): Promise<[number, string][]> {
  items.sort((a, b) => a[0] - b[0]);
  let i = 0;
  while (i < items.length) {
    const from = items[i][0];
    let j = i;
    while (j + 1 < items.length && items[j + 1][0] - from < 1000) j++;
    const a = await http("GET", `${chainPath(w)}/entries?from=${from}&limit=${items[j][0] - from + 1}`).catch((e: Error) => e);
    if (a instanceof Error || transient(a)) return items.slice(i);
    if (a.status !== 200) {
      log("warn", "evident: cannot read evidentd's entries to compare them with the Coordinator's", { workspace: w.id, from, status: a.status });
      return [];
    }
    const held = new Map<number, { record: unknown; meta?: Record<string, unknown> }>();
    for (const e of (a.body as { entries?: { seq: number; record: unknown; meta?: Record<string, unknown> }[] }).entries ?? []) held.set(e.seq, e);
    for (let k = i; k <= j; k++) {
      const [seq, json] = items[k];
      const e = held.get(seq);
      if (!e) continue;
      let entry: Record<string, unknown>;
      try { entry = JSON.parse(json) as Record<string, unknown>; } catch { continue; }
      const mine = recordHash(entry);
      const theirs = createHash("sha256").update(canonicalize(e.record) ?? "").digest("hex");
      const arrived = e.meta?.arrived;
      if (mine !== theirs) diverge(w, seq, "record", { evidentd: { record_sha256: theirs, arrived }, coordinator: { record_sha256: mine, arrived: entry.arrived }, entry });
      else if (typeof arrived === "string" && typeof entry.arrived === "string" && arrived !== entry.arrived) {
        diverge(w, seq, "arrived", { evidentd: { record_sha256: theirs, arrived }, coordinator: { record_sha256: mine, arrived: entry.arrived }, entry });
      }
    }
    i = j + 1;
  }
  return [];
}

/** evidentd holds, at a seq, another record ("record") or the same record with another arrival
 * ("arrived") than the Coordinator's log: logged and kept in refused.jsonl, once per seq. */
function diverge(w: WS, seq: number, kind: "record" | "arrived", fields: Record<string, unknown>) {
  if (kind === "record" && (w.diverged === undefined || seq < w.diverged)) w.diverged = seq;
  const key = `${seq} ${kind}`;
  if (w.divergences.has(key)) return;
  w.divergences.add(key);
  const { entry, ...rest } = fields;
  log(kind === "record" ? "error" : "warn", kind === "record"
    ? "evident: evidentd holds another record than the Coordinator's log at this seq"
    : "evident: evidentd holds this record with another arrival than the Coordinator's log", { workspace: w.id, seq, ...rest });
  try {
    fs.appendFileSync(refusedFile, JSON.stringify({ workspace: w.id, seq, at: new Date().toISOString(), divergence: kind, ...rest, entry }) + "\n");
  } catch (e) { log("error", "evident: cannot write refused.jsonl", { error: String(e) }); }
}

function askGap(w: WS, from: number) {
  let to = w.maxSeen + 1;
  for (const s of w.pending.keys()) if (s > from && s < to) to = s;
  const key = `${from}-${to}`;
  if (w.gapAsked === key || !w.coordinatorKnown) return;
  w.gapAsked = key;
  log("info", "evident: filling a gap from the Coordinator's log", { workspace: w.id, from, to });
  syncSend({ t: "needGap", ws: w.id, from, to });
}

// ---- flush ----------------------------------------------------------------------------------

function settle() {
  for (let i = flushWaiters.length - 1; i >= 0; i--) {
    const f = flushWaiters[i];
    let done = true;
    let err: string | undefined;
    for (const [w, target] of f.targets) {
      if (w.stopped && w.stopped.seq <= target) { err = `evidentd refused workspace ${w.id} seq ${w.stopped.seq}: ${w.stopped.code} ${w.stopped.detail}`; break; }
      if (w.diverged !== undefined && w.diverged <= target) { err = `evidentd holds another record than the Coordinator at workspace ${w.id} seq ${w.diverged}`; break; }
      if (w.remote === undefined || w.remote <= target || (w.reportCount ?? 0) > w.reported || w.toCheck.length > 0 || w.checking ||
        (w.pending.has(w.remote) && (!gated || w.remote < w.released))) done = false;
    }
    if (err || done) {
      flushWaiters.splice(i, 1);
      send({ t: "flushed", id: f.id, error: err });
    }
  }
}

// ---- receipts ---------------------------------------------------------------------------------

async function submit(id: number, wsId: string, hash: string, payload: string, contentType: string) {
  const deadline = Date.now() + cfg.sealWaitMs;
  const reply = (m: Omit<Extract<SyncFromWorker, { t: "submitted" }>, "t" | "id">) => syncSend({ t: "submitted", id, ...m });
  try {
    spoolBatch();
    const w = wsFor(wsId);
    let seqs = w.index.get(hash);
    if (!seqs) { await indexFromEvidentd(w, deadline); seqs = w.index.get(hash); }
    if (!seqs) { reply({ receipt: null, error: undefined }); log("warn", "evident: no entry with this payload", { workspace: wsId }); return; }
    const c = w.cursor.get(hash) ?? 0;
    const seq = seqs[c % seqs.length];
    w.cursor.set(hash, (c + 1) % seqs.length);
    // make sure evidentd holds it
    pump(w);
    let attempt = 0;
    while (w.remote === undefined || w.remote <= seq) {
      if (w.stopped && w.stopped.seq <= seq) { reply({ receipt: null }); return; }
      if (Date.now() > deadline) { reply({ error: `evidentd has not acknowledged seq ${seq} of ${wsId} within ${cfg.sealWaitMs} ms` }); return; }
      await sleep(Math.min(5 * 2 ** attempt++, 200));
      if (!w.sending) pump(w);
    }
    const rp = `${chainPath(w)}/entries/${seq}/entry-receipt?content_type=${encodeURIComponent(contentType)}`;
    attempt = 0;
    let sealed = false;
    let last = "";
    for (;;) {
      if (Date.now() > deadline) { reply({ error: `no entry receipt for ${wsId} seq ${seq} within ${cfg.sealWaitMs} ms (last: ${last})` }); return; }
      const a = await http("GET", rp, undefined, undefined, Math.max(1000, deadline - Date.now())).catch((e: Error) => e);
      last = a instanceof Error ? a.message : `${a.status} ${String(problem(a).code ?? "")} ${String(problem(a).detail ?? "")}`;
      if (a instanceof Error || transient(a)) { await sleep(Math.min(jitter(100 * 2 ** attempt++), Math.max(0, deadline - Date.now()))); continue; }
      if (a.status === 200 && typeof a.body === "object" && a.body !== null) {
        const got = receiptPayload(a.body);
        if (!got || !got.equals(Buffer.from(payload, "utf8"))) {
          log("warn", "evident: evidentd holds another record at this seq", { workspace: wsId, seq });
          reply({ receipt: null });
        } else reply({ receipt: a.body as Record<string, unknown> });
        return;
      }
      const pr = problem(a);
      if (a.status === 409 && pr.code === "not_sealed") {
        if (!sealed || attempt > 4) {
          const s = await http("POST", `${chainPath(w)}/seal`, "", undefined, Math.max(1000, deadline - Date.now())).catch((e: Error) => e);
          if (!(s instanceof Error) && s.status < 300) sealed = true;
          else last += ` (seal: ${s instanceof Error ? s.message : `${s.status} ${String(problem(s).code ?? "")} ${String(problem(s).detail ?? "")}`})`;
        }
        await sleep(Math.min(25 * 2 ** attempt++, 500));
        continue;
      }
      reply({ error: `evidentd answered ${a.status} ${String(pr.code ?? "")} ${String(pr.detail ?? "")} for the entry receipt of ${wsId} seq ${seq}` });
      return;
    }
  } catch (e) {
    reply({ error: (e as Error).message });
  }
}

/** Indexes the records evidentd holds (entries the adapter never saw, e.g. before it was installed). */
async function indexFromEvidentd(w: WS, deadline: number) {
  let from = 0;
  const lines: string[] = [];
  while (Date.now() < deadline) {
    const a = await http("GET", `${chainPath(w)}/entries?from=${from}&limit=1000`).catch((e: Error) => e);
    if (a instanceof Error || a.status !== 200) break;
    const es = (a.body as { entries?: { seq: number; record: unknown }[] }).entries ?? [];
    for (const e of es) {
      const h = createHash("sha256").update(canonicalize(e.record) ?? "").digest("hex");
      if (addIndex(w, h, e.seq)) lines.push(`${e.seq} ${h}\n`);
    }
    if (es.length === 0) break;
    from = es[es.length - 1].seq + 1;
  }
  if (lines.length) { fs.writeSync(w.indexFd, lines.join("")); fs.fsyncSync(w.indexFd); }
}

// ---- messages -----------------------------------------------------------------------------------

parentPort!.on("message", (m: ToWorker) => {
  if (Array.isArray(m)) {
    const [ws, seq, head, json, first] = m;
    const w = wsFor(ws);
    if (first) { w.coordinatorKnown = true; w.gapAsked = undefined; }
    enqueue(w, seq, head, json);
    return;
  }
  switch (m.t) {
    case "check": {
      const w = wsFor(m.ws);
      for (const [seq, , json] of m.items) if (w.remote !== undefined && seq < w.remote) w.toCheck.push([seq, json]);
      pump(w);
      return;
    }
    case "gate":
      gated = true;
      return;
    case "release": {
      spoolBatch(); // the entries are in the spool before the line that releases them
      for (const [id, n] of m.r) release(wsFor(id), n);
      settle();
      return;
    }
    case "gap": {
      const w = wsFor(m.ws);
      w.gapAsked = undefined;
      if (m.unknown) { w.coordinatorKnown = false; return; }
      if (m.items.length === 0) log("error", "evident: the Coordinator's log lacks entries evidentd and the spool lack too", { workspace: m.ws });
      for (const [seq, head, json] of m.items) enqueue(w, seq, head, json);
      return;
    }
    case "flush": {
      spoolBatch();
      const targets = new Map<WS, number>();
      for (const w of workspaces.values()) {
        // with a wrapped store: what the store saved (the main thread waited for the saves in flight)
        const target = gated ? Math.min(w.maxSeen, w.released - 1) : w.maxSeen;
        if (target >= 0) { targets.set(w, target); pump(w); }
      }
      flushWaiters.push({ id: m.id, targets });
      settle();
      return;
    }
    case "submit":
      void submit(m.id, m.ws, m.hash, m.payload, m.contentType);
      return;
    case "close":
      spoolBatch();
      closing = true;
      for (const w of workspaces.values()) { clearTimeout(w.timer); try { fs.closeSync(w.fd); fs.closeSync(w.indexFd); } catch { /* closed */ } }
      syncPort.close();
      process.exit(0);
  }
});

// Resume what a previous run left in the spool.
for (const f of fs.readdirSync(cfg.spoolDir)) {
  const m = /^ws-([A-Za-z0-9_-]*)\.jsonl$/.exec(f);
  if (!m) continue;
  const w = wsFor(Buffer.from(m[1], "base64url").toString("utf8"));
  if (w.pending.size > 0) pump(w);
}
