// Evident adapter for the CHAP reference Coordinator (@brightbeamai/chap-coordinator 0.2.10).
// The contract is integrations/README.md; the receipt format docs/entry-receipt.md.
import { createHash } from "node:crypto";
import * as path from "node:path";
import { MessageChannel, receiveMessageOnPort, Worker } from "node:worker_threads";
import type { EntryMsg, FromWorker, SyncFromWorker, ToWorker, WorkerConfig } from "./protocol.ts";
import { receiptValid, verifyEntryReceipt } from "./receipt.ts";
import { loadTrust, type Trust } from "./trust.ts";

export { verifyEntryReceipt, loadTrust };
export type { Trust };

/** The parts of the Coordinator's Workspace the adapter reads. */
export interface Workspace {
  id: string;
  audit: AuditEntry[];
  chain_head?: string | null;
}

export interface AuditEntry {
  seq: number;
  arrived: string;
  envelope?: unknown;
  request?: unknown;
  outcome?: unknown;
  prev_hash?: string | null;
}

export interface Logger {
  info?(msg: string, fields?: Record<string, unknown>): void;
  warn?(msg: string, fields?: Record<string, unknown>): void;
  error?(msg: string, fields?: Record<string, unknown>): void;
}

export interface EvidentOptions {
  /** evidentd's base URL, e.g. http://127.0.0.1:8080 */
  url: string;
  /** write token (Authorization: Bearer) */
  token?: string;
  /** the pinned trust file evident-trust/v1: a path or the parsed object */
  trust?: string | Record<string, unknown>;
  /** spool directory, default ./evident-spool */
  spoolDir?: string;
  /** how long scittSubmitter waits for evidentd (acknowledgement, seal, receipt), default 30000 */
  sealWaitMs?: number;
  logger?: Logger;
  /** tuning, for tests: backoff bounds, refusal retry, batch size */
  backoffMinMs?: number;
  backoffMaxMs?: number;
  refusedRetryMs?: number;
  maxBatch?: number;
  closeFlushMs?: number;
}

/** The Coordinator's persistence interface (@brightbeamai/chap-coordinator storage/store.ts). */
export interface WorkspaceRecord {
  id: string;
  /** the workspace's snapshot; its `audit` is the workspace's audit log */
  data: unknown;
  version: number;
  updated_at: string;
}

export interface Store {
  load(): Promise<WorkspaceRecord[]> | WorkspaceRecord[];
  save(record: WorkspaceRecord): Promise<void> | void;
  delete(id: string): Promise<void> | void;
  close?(): Promise<void> | void;
}

export interface EvidentHooks {
  onAudit(ws: Workspace, entry: AuditEntry): void;
  /** Wraps the Coordinator's store: an entry is sent to evidentd only once a save of its workspace
   * that holds it has completed. Call it once per Coordinator, before constructing it:
   * `new Coordinator({ store: h.wrapStore(new SqliteStore(…)), onAudit: h.onAudit, … })`. */
  wrapStore(store: Store): Store;
  scittSubmitter(statement: Record<string, unknown>): Record<string, unknown> | null;
  verifyScittReceipt(receipt: Record<string, unknown>): boolean;
  flush(): Promise<void>;
  close(): Promise<void>;
}

const defaultLogger: Logger = {
  warn: (m, f) => console.warn(m, f ?? ""),
  error: (m, f) => console.error(m, f ?? ""),
};

const ext = path.extname(new URL(import.meta.url).pathname) || ".js";

/** Starts the worker thread: worker.js as such; worker.ts natively when Node strips types, else through tsx's loader. */
function startWorker(cfg: WorkerConfig): Worker {
  const url = new URL("./worker" + ext, import.meta.url);
  const features = process.features as { typescript?: string | false };
  if (ext !== ".ts" || features.typescript) return new Worker(url, { workerData: cfg, transferList: [cfg.syncPort as never] });
  let tsx: string;
  try {
    tsx = import.meta.resolve("tsx/esm/api");
  } catch {
    throw new Error("evident: running from TypeScript sources on a Node without type stripping needs tsx installed");
  }
  const shim = `import(${JSON.stringify(tsx)}).then((m) => m.register()).then(() => import(${JSON.stringify(url.href)}))`;
  return new Worker(shim, { eval: true, workerData: cfg, transferList: [cfg.syncPort as never] });
}

export function evidentHooks(opts: EvidentOptions): EvidentHooks {
  if (!opts || typeof opts.url !== "string" || !/^https?:\/\//.test(opts.url)) throw new Error("evidentHooks: url must be http(s)://…");
  const trust: Trust | undefined = opts.trust === undefined ? undefined : loadTrust(opts.trust);
  const logger = opts.logger ?? defaultLogger;
  const sealWaitMs = opts.sealWaitMs ?? 30000;
  const flag = new SharedArrayBuffer(4);
  const flagView = new Int32Array(flag);
  const { port1: syncMain, port2: syncWorker } = new MessageChannel();
  const cfg: WorkerConfig = {
    url: opts.url,
    token: opts.token,
    spoolDir: path.resolve(opts.spoolDir ?? "evident-spool"),
    sealWaitMs,
    flag,
    syncPort: syncWorker,
    backoffMinMs: opts.backoffMinMs ?? 100,
    backoffMaxMs: opts.backoffMaxMs ?? 30000,
    refusedRetryMs: opts.refusedRetryMs ?? 60000,
    maxBatch: opts.maxBatch ?? 1000,
  };
  const worker = startWorker(cfg);
  worker.unref();
  let closed = false;
  let nextId = 1;
  let refs = 0;
  const ref = () => { if (refs++ === 0) worker.ref(); };
  const unref = () => { if (--refs === 0) worker.unref(); };
  const flushes = new Map<number, { resolve(): void; reject(e: Error): void }>();
  const known = new Map<string, Workspace>();
  let workerError: Error | undefined;

  const post = (m: ToWorker) => worker.postMessage(m);

  // ---- the wrapped store: saves completed → entries released to the worker ----
  let gated = false;
  const inflight = new Set<Promise<void>>(); // saves not yet completed (they never reject)
  const releases = new Map<string, number>(); // workspace → count saved, not yet posted
  let releaseScheduled = false;
  function postReleases() {
    releaseScheduled = false;
    if (releases.size === 0 || closed) return;
    post({ t: "release", r: [...releases] });
    releases.clear();
  }
  function release(id: string, n: number) {
    const cur = releases.get(id);
    if (cur === undefined || n > cur) releases.set(id, n);
    // one message per turn of the event loop, however many saves completed in it
    if (!releaseScheduled) { releaseScheduled = true; queueMicrotask(postReleases); }
  }

  function wrapStore(store: Store): Store {
    if (!store || typeof store.save !== "function" || typeof store.load !== "function") throw new Error("evident: wrapStore needs a Store (load, save, delete)");
    if (!gated) { gated = true; post({ t: "gate" }); }
    const wrapped: Store = {
      load: () => store.load(),
      save(record: WorkspaceRecord) {
        // the count the snapshot holds now: data.audit is the workspace's live array
        const audit = (record?.data as { audit?: unknown } | undefined)?.audit;
        const n = Array.isArray(audit) ? audit.length : -1;
        const id = record?.id;
        const r = store.save(record); // a throw propagates (the Coordinator swallows it): nothing released
        if (r !== null && typeof r === "object" && typeof (r as Promise<void>).then === "function") {
          const p: Promise<void> = Promise.resolve(r).then(
            () => { inflight.delete(p); if (n >= 0 && typeof id === "string") release(id, n); },
            () => { inflight.delete(p); /* not saved: nothing released; a later save carries the entries */ });
          inflight.add(p);
          return r;
        }
        if (n >= 0 && typeof id === "string") release(id, n);
        return r;
      },
      delete: (id: string) => store.delete(id),
    };
    if (typeof store.close === "function") wrapped.close = () => store.close!();
    return wrapped;
  }

  worker.on("message", (m: FromWorker) => {
    if (m.t === "log") {
      try { logger[m.level]?.(m.msg, m.fields); } catch { /* a logger never breaks the adapter */ }
    } else if (m.t === "flushed") {
      const f = flushes.get(m.id);
      flushes.delete(m.id);
      if (f) { if (m.error) f.reject(new Error(m.error)); else f.resolve(); }
    }
  });
  worker.on("error", (e) => {
    workerError = e;
    logger.error?.("evident: the adapter's worker failed", { error: String(e) });
  });
  worker.on("exit", () => {
    closed = true;
    for (const f of flushes.values()) f.reject(workerError ?? new Error("evident: the adapter's worker stopped"));
    flushes.clear();
  });

  /** The Coordinator's entries with from <= seq < to, from workspace.audit: [seq, head after it, JSON]. */
  function fromLog(ws: Workspace, from: number, to: number): [number, string | null, string][] {
    const items: [number, string | null, string][] = [];
    const audit = ws.audit;
    // audit[i].seq === i in the reference Coordinators; scan only when it is not so
    const direct = audit[from]?.seq === from;
    for (let i = direct ? from : 0; i < audit.length; i++) {
      const e = audit[i];
      if (e.seq < from || e.seq >= to) { if (direct && e.seq >= to) break; continue; }
      let head: string | null = null;
      if (e.prev_hash != null) {
        const nx = audit[i + 1];
        head = nx && nx.seq === e.seq + 1 ? (nx.prev_hash ?? null) : i === audit.length - 1 ? (ws.chain_head ?? null) : null;
      }
      items.push([e.seq, head, JSON.stringify(e)]);
    }
    return items;
  }

  /** Answers the worker's request for entries it has neither in the spool nor in evidentd, or for
   * the Coordinator's entries at seqs evidentd holds (to compare them). */
  function fillGap(m: Extract<SyncFromWorker, { t: "needGap" | "needCheck" }>) {
    const ws = known.get(m.ws);
    if (m.t === "needCheck") { post({ t: "check", ws: m.ws, items: ws ? fromLog(ws, m.from, m.to) : [] }); return; }
    if (!ws) { post({ t: "gap", ws: m.ws, items: [], unknown: true }); return; }
    post({ t: "gap", ws: m.ws, items: fromLog(ws, m.from, m.to) });
  }
  syncMain.on("message", (m: SyncFromWorker) => { if (m.t === "needGap" || m.t === "needCheck") fillGap(m); });
  syncMain.unref();

  function onAudit(ws: Workspace, entry: AuditEntry): void {
    try {
      if (closed) return;
      let first = 0;
      if (known.get(ws.id) !== ws) { known.set(ws.id, ws); first = 1; }
      const m: EntryMsg = [ws.id, entry.seq, entry.prev_hash != null ? (ws.chain_head ?? null) : null, JSON.stringify(entry), first];
      worker.postMessage(m);
    } catch (e) {
      try { logger.error?.("evident: onAudit failed", { error: String(e) }); } catch { /* never throws */ }
    }
  }

  function scittSubmitter(statement: Record<string, unknown>): Record<string, unknown> | null {
    if (closed) throw new Error("evident: the adapter is closed");
    const prot = statement?.protected as Record<string, unknown> | undefined;
    const ws = (prot?.cwt_claims as Record<string, unknown> | undefined)?.sub;
    const payload = statement?.payload;
    if (typeof ws !== "string" || typeof payload !== "string") throw new Error("evident: statement without cwt_claims.sub or payload");
    const contentType = typeof prot?.["content-type"] === "string" ? prot["content-type"] as string : "application/chap+json;version=0.3";
    const hash = createHash("sha256").update(payload, "utf8").digest("hex");
    postReleases(); // saves completed in this turn: the worker needs them to send the entry
    const id = nextId++;
    let seen = Atomics.load(flagView, 0);
    post({ t: "submit", id, ws, hash, payload, contentType });
    const deadline = Date.now() + sealWaitMs + 5000;
    for (;;) {
      const got = receiveMessageOnPort(syncMain);
      if (got) {
        const m = got.message as SyncFromWorker;
        if (m.t === "needGap" || m.t === "needCheck") { fillGap(m); continue; }
        if (m.id !== id) continue; // an answer to a call that timed out
        if (m.error) throw new Error(`evident: ${m.error}`);
        return m.receipt ?? null;
      }
      const left = deadline - Date.now();
      if (left <= 0 || closed) throw new Error(`evident: no answer from the adapter's worker within ${sealWaitMs} ms`);
      Atomics.wait(flagView, 0, seen, left);
      seen = Atomics.load(flagView, 0);
    }
  }

  function verifyScittReceipt(receipt: Record<string, unknown>): boolean {
    if (!trust) throw new Error("evident: no trust file configured: a receipt checked against keys it carries would prove nothing");
    return receiptValid(receipt, trust);
  }

  function flush(): Promise<void> {
    if (closed) return Promise.reject(workerError ?? new Error("evident: the adapter is closed"));
    ref();
    // with a wrapped store: the saves in flight first (the entries they hold count as persisted
    // before this call); a save that fails releases nothing, and flush does not wait for it
    const saves = inflight.size > 0 ? Promise.all([...inflight]) : Promise.resolve([]);
    return saves.then(() => {
      if (closed) throw workerError ?? new Error("evident: the adapter is closed");
      postReleases();
      const id = nextId++;
      return new Promise<void>((resolve, reject) => {
        flushes.set(id, { resolve, reject });
        post({ t: "flush", id });
      });
    }).finally(unref);
  }

  async function close(): Promise<void> {
    if (closed) return;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([flush(), new Promise<void>((_, rej) => { timer = setTimeout(() => rej(new Error("evident: flush did not finish in time")), opts.closeFlushMs ?? 30000); })]);
    } catch (e) {
      logger.warn?.("evident: closing with entries not acknowledged (they stay in the spool)", { error: String(e) });
    } finally {
      clearTimeout(timer);
    }
    const exited = new Promise<void>((r) => worker.once("exit", () => r()));
    post({ t: "close" });
    closed = true;
    const t = setTimeout(() => void worker.terminate(), 5000);
    await exited;
    clearTimeout(t);
    syncMain.close();
  }

  return { onAudit, wrapStore, scittSubmitter, verifyScittReceipt, flush, close };
}
