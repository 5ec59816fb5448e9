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
}

export interface EvidentHooks {
  onAudit(ws: Workspace, entry: AuditEntry): void;
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

  /** Answers the worker's request for entries it has neither in the spool nor in evidentd. */
  function fillGap(m: Extract<SyncFromWorker, { t: "needGap" }>) {
    const ws = known.get(m.ws);
    if (!ws) { post({ t: "gap", ws: m.ws, items: [], unknown: true }); return; }
    const items: [number, string | null, string][] = [];
    const audit = ws.audit;
    for (let i = 0; i < audit.length; i++) {
      const e = audit[i];
      if (e.seq < m.from || e.seq >= m.to) continue;
      let head: string | null = null;
      if (e.prev_hash != null) {
        const nx = audit[i + 1];
        head = nx && nx.seq === e.seq + 1 ? (nx.prev_hash ?? null) : i === audit.length - 1 ? (ws.chain_head ?? null) : null;
      }
      items.push([e.seq, head, JSON.stringify(e)]);
    }
    post({ t: "gap", ws: m.ws, items });
  }
  syncMain.on("message", (m: SyncFromWorker) => { if (m.t === "needGap") fillGap(m); });
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
    const id = nextId++;
    let seen = Atomics.load(flagView, 0);
    post({ t: "submit", id, ws, hash, payload, contentType });
    const deadline = Date.now() + sealWaitMs + 5000;
    for (;;) {
      const got = receiveMessageOnPort(syncMain);
      if (got) {
        const m = got.message as SyncFromWorker;
        if (m.t === "needGap") { fillGap(m); continue; }
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
    const id = nextId++;
    ref();
    return new Promise<void>((resolve, reject) => {
      flushes.set(id, { resolve, reject });
      post({ t: "flush", id });
    }).finally(unref);
  }

  async function close(): Promise<void> {
    if (closed) return;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([flush(), new Promise<void>((_, rej) => { timer = setTimeout(() => rej(new Error("evident: flush did not finish within 30 s")), 30000); })]);
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

  return { onAudit, scittSubmitter, verifyScittReceipt, flush, close };
}
