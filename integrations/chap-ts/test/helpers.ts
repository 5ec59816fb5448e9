// Test helpers: a real evidentd on loopback, the reference audit logs, and a stand-in that calls
// the hooks exactly as the reference Coordinator 0.2.10 does.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { gunzipSync } from "node:zlib";
import { after } from "node:test";
import canonicalize from "canonicalize";
import { evidentHooks, type AuditEntry, type EvidentHooks, type EvidentOptions, type Logger, type Store, type Workspace, type WorkspaceRecord } from "../src/index.ts";

export const repoRoot = path.resolve(import.meta.dirname, "../../..");
export const vectors = path.join(repoRoot, "testvectors/chap-reference");

const made: string[] = [];
export function tmpDir(prefix: string): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), `evident-chap-ts-${prefix}-`));
  made.push(d);
  return d;
}
/** Removes the temporary directories this process made (call after stopping evidentd). */
export function removeTmpDirs() {
  for (const d of made.splice(0)) fs.rmSync(d, { recursive: true, force: true });
}

let built: string | undefined;
/** evidentd built from this repository (or EVIDENTD_BIN). */
export function evidentdBin(): string {
  if (process.env.EVIDENTD_BIN) return process.env.EVIDENTD_BIN;
  if (built) return built;
  const out = path.join(tmpDir("bin"), "evidentd");
  execFileSync("go", ["build", "-o", out, "./cmd/evidentd"], { cwd: repoRoot, stdio: "inherit", timeout: 300_000 });
  built = out;
  return out;
}

export class Evidentd {
  proc?: ChildProcess;
  url = "";
  log = "";
  constructor(public dataDir: string, public extraArgs: string[] = []) {}

  async start(): Promise<this> {
    // its log goes to a file, not a pipe: a pipe nobody drains while the hooks' submitter blocks
    // this thread would fill up and stall evidentd
    const logFile = path.join(this.dataDir, "..", path.basename(this.dataDir) + ".log");
    const fd = fs.openSync(logFile, "w");
    const p = spawn(evidentdBin(), ["-data", this.dataDir, "-listen", "127.0.0.1:0", "-checkpoint-interval", "200ms", ...this.extraArgs], { stdio: ["ignore", fd, fd] });
    fs.closeSync(fd);
    this.proc = p;
    let exited = false;
    p.once("exit", () => { exited = true; });
    const deadline = Date.now() + 20000;
    for (;;) {
      this.log = fs.readFileSync(logFile, "utf8");
      const m = /msg="evidentd listening" addr=(http:\/\/127\.0\.0\.1:\d+)/.exec(this.log.split("\n").filter((l) => l.includes("evidentd listening")).at(-1) ?? "");
      if (m) { this.url = m[1]; return this; }
      if (exited || Date.now() > deadline) throw new Error("evidentd did not start:\n" + this.log);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Kills the process (SIGKILL: no clean shutdown) and waits for it. */
  async kill(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const done = new Promise((r) => p.once("exit", r));
    p.kill("SIGKILL");
    await done;
  }

  async stop(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const done = new Promise((r) => p.once("exit", r));
    p.kill("SIGTERM");
    const t = setTimeout(() => p.kill("SIGKILL"), 5000);
    await done;
    clearTimeout(t);
  }

  async trust(): Promise<Record<string, unknown>> {
    const r = await fetch(this.url + "/.well-known/evident-trust");
    if (r.status !== 200) throw new Error(`trust: ${r.status}`);
    return (await r.json()) as Record<string, unknown>;
  }

  async chain(ws: string): Promise<{ size: number; head: string } | undefined> {
    const r = await fetch(`${this.url}/v1/chains/${encodeURIComponent(ws)}`);
    if (r.status === 404) return undefined;
    return (await r.json()) as { size: number; head: string };
  }

  /** Every entry of the chain, read page by page. */
  async entries(ws: string): Promise<{ seq: number; record: unknown; meta?: Record<string, unknown> }[]> {
    const out: { seq: number; record: unknown; meta?: Record<string, unknown> }[] = [];
    for (let from = 0; ;) {
      const r = await fetch(`${this.url}/v1/chains/${encodeURIComponent(ws)}/entries?from=${from}&limit=7`);
      if (r.status === 404) return out;
      const b = (await r.json()) as { entries: { seq: number; record: unknown; meta?: Record<string, unknown> }[] };
      if (b.entries.length === 0) return out;
      out.push(...b.entries);
      from = b.entries[b.entries.length - 1].seq + 1;
    }
  }
}

export interface Journey { source: string; name: string; entries: AuditEntry[]; workspace: string }

export function readJourney(source: string, name: string): Journey {
  const dir = path.join(vectors, source);
  const f = path.join(dir, `${name}.audit.jsonl`);
  const text = fs.existsSync(f) ? fs.readFileSync(f, "utf8") : gunzipSync(fs.readFileSync(f + ".gz")).toString("utf8");
  const entries = text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as AuditEntry);
  const env = (entries[0].envelope ?? entries[0].request) as { params: { workspace: string } };
  return { source, name, entries, workspace: env.params.workspace };
}

export function journeys(source: string): string[] {
  return fs.readdirSync(path.join(vectors, source))
    .map((f) => /^(.*)\.audit\.jsonl(\.gz)?$/.exec(f)?.[1]).filter((x): x is string => !!x).sort();
}

export const ZERO_HASH = "sha256:" + "0".repeat(64);
export function linkHash(record: unknown, prev: string): string {
  return "sha256:" + createHash("sha256").update(Buffer.concat([Buffer.from(canonicalize(record)!, "utf8"), Buffer.from(prev, "utf8")])).digest("hex");
}

/** A stand-in for the reference Coordinator: its recordAudit listener loop, audit.submit_to_scitt
 * (buildStatement and the submit loop) and audit.verify_receipt, as 0.2.10 writes them. */
export class StandIn {
  ws: Workspace & { chain_head: string | null };
  listeners: ((ws: Workspace, e: AuditEntry) => void)[] = [];
  version = 0;
  /** store: persisted after every entry, as recordAudit's persist() does (after the listeners) */
  constructor(id: string, public hooks: EvidentHooks, public store?: Store) {
    this.ws = { id, audit: [], chain_head: null };
    this.listeners.push(hooks.onAudit);
  }

  /** The Coordinator after a restart: its store reloaded the first n entries of other's log. */
  static reloaded(other: StandIn, n: number, hooks: EvidentHooks, store?: Store): StandIn {
    const si = new StandIn(other.ws.id, hooks, store);
    si.ws.audit = JSON.parse(JSON.stringify(other.ws.audit.slice(0, n))) as AuditEntry[];
    si.ws.chain_head = n < other.ws.audit.length ? (other.ws.audit[n].prev_hash ?? null) : other.ws.chain_head;
    return si;
  }

  /** persist(): store.save({id, data: snapshot (its audit is the live array), version, updated_at}); failures swallowed. */
  persist(): void {
    if (!this.store) return;
    try {
      const r = this.store.save({ id: this.ws.id, data: { id: this.ws.id, audit: this.ws.audit, chain_head: this.ws.chain_head }, version: ++this.version, updated_at: new Date().toISOString() });
      if (r instanceof Promise) r.catch(() => { /* deliberately swallowed */ });
    } catch { /* persistence failures must not break dispatch */ }
  }

  /** recordAudit, replaying an entry the reference Coordinator logged (its prev_hash decides chaining). */
  record(logged: AuditEntry): void {
    const ws = this.ws;
    const entry: AuditEntry = { seq: ws.audit.length, arrived: logged.arrived };
    if (logged.envelope !== undefined) entry.envelope = JSON.parse(JSON.stringify(logged.envelope));
    else { entry.request = logged.request; entry.outcome = logged.outcome; }
    if (logged.prev_hash != null) {
      const prev = ws.chain_head ?? ZERO_HASH;
      entry.prev_hash = prev;
      ws.chain_head = linkHash(entry.envelope ?? { outcome: entry.outcome, request: entry.request }, prev);
    }
    ws.audit.push(entry);
    for (const l of this.listeners) {
      try { l(ws, entry); } catch { /* listeners never break dispatch */ }
    }
    this.persist();
  }

  static buildStatement(workspaceId: string, envelope: unknown, issuer: string): Record<string, unknown> {
    return {
      protected: {
        alg: -8, iss: issuer, kid: "scitt-issuer",
        cwt_claims: { sub: workspaceId, iat: null },
        "content-type": "application/chap+json;version=0.2",
      },
      payload: Buffer.from(canonicalize(envelope)!, "utf8").toString("utf-8"),
      signature: "<deployment-supplied>",
    };
  }

  /** audit.submit_to_scitt: {result:{receipts}} or {error:{code,message}}. */
  submit(fromSeq = 0, toSeq = this.ws.audit.length): { result?: { receipts: { seq: number; receipt: Record<string, unknown> }[] }; error?: { code: number; message: string } } {
    const receipts: { seq: number; receipt: Record<string, unknown> }[] = [];
    for (const entry of this.ws.audit.slice(fromSeq, toSeq)) {
      const statement = StandIn.buildStatement(this.ws.id, entry.envelope, "service:coordinator");
      let receipt: Record<string, unknown> | null;
      try {
        receipt = this.hooks.scittSubmitter(statement);
      } catch (e) {
        return { error: { code: -32080, message: `SCITT submission error: ${e instanceof Error ? e.message : String(e)}` } };
      }
      if (receipt === null) return { error: { code: -32081, message: `Statement rejected at seq ${entry.seq}` } };
      receipts.push({ seq: entry.seq, receipt });
    }
    return { result: { receipts } };
  }

  /** audit.verify_receipt */
  verify(receipt: unknown): { result?: { verified: true }; error?: { code: number; message: string } } {
    if (typeof receipt !== "object" || receipt === null) return { error: { code: -32602, message: "receipt must be an object" } };
    let ok: boolean;
    try { ok = !!this.hooks.verifyScittReceipt(receipt as Record<string, unknown>); } catch (e) {
      return { error: { code: -32082, message: `verify error: ${e instanceof Error ? e.message : String(e)}` } };
    }
    if (!ok) return { error: { code: -32082, message: "Receipt did not verify" } };
    return { result: { verified: true } };
  }
}

/** A loopback TCP proxy on port 0, so that the hooks keep one URL while evidentd restarts. It runs
 * in a worker thread: the hooks' synchronous submitter blocks this thread while the worker does I/O. */
import { Worker } from "node:worker_threads";
const proxyCode = `
const net = require("node:net");
const { parentPort } = require("node:worker_threads");
let target;
const sockets = new Set();
const server = net.createServer((c) => {
  sockets.add(c);
  c.on("close", () => sockets.delete(c));
  c.on("error", () => {});
  if (target === undefined) { c.destroy(); return; }
  const up = net.connect(target, "127.0.0.1");
  sockets.add(up);
  up.on("close", () => { sockets.delete(up); c.destroy(); });
  c.on("close", () => up.destroy());
  up.on("error", () => c.destroy());
  c.pipe(up).pipe(c);
});
server.listen(0, "127.0.0.1", () => parentPort.postMessage({ port: server.address().port }));
parentPort.on("message", (m) => {
  if (m.close) { for (const s of sockets) s.destroy(); server.close(() => process.exit(0)); return; }
  target = m.target;
  if (target === undefined) for (const s of sockets) s.destroy();
  parentPort.postMessage({ ok: true });
});
`;
export class Proxy {
  worker!: Worker;
  url = "";
  async start(): Promise<this> {
    this.worker = new Worker(proxyCode, { eval: true });
    const m = await new Promise<{ port: number }>((r) => this.worker.once("message", r));
    this.url = `http://127.0.0.1:${m.port}`;
    return this;
  }
  async to(url: string | undefined) {
    const done = new Promise((r) => this.worker.once("message", r));
    this.worker.postMessage({ target: url ? Number(new URL(url).port) : undefined });
    await done;
  }
  async close() {
    const exited = new Promise((r) => this.worker.once("exit", r));
    this.worker.postMessage({ close: true });
    await exited;
  }
}

/** A store whose saves the test controls: "sync" saves at once, "held" returns a Promise settled
 * by the test (release/fail), "throw" throws, "never" returns a Promise that never settles. */
export class TestStore implements Store {
  mode: "sync" | "held" | "throw" | "never" = "sync";
  saved = new Map<string, number>(); // workspace → audit entries the last completed save held
  held: { n: number; resolve(): void; reject(e: Error): void }[] = [];
  load(): WorkspaceRecord[] { return []; }
  save(record: WorkspaceRecord): Promise<void> | void {
    const n = (record.data as { audit: unknown[] }).audit.length;
    const done = () => { this.saved.set(record.id, Math.max(this.saved.get(record.id) ?? 0, n)); };
    switch (this.mode) {
      case "sync": done(); return;
      case "throw": throw new Error("disk full");
      case "never": return new Promise<void>(() => {});
      case "held": return new Promise<void>((resolve, reject) => { this.held.push({ n, resolve: () => { done(); resolve(); }, reject }); });
    }
  }
  delete(): void {}
}


export interface LogLine { level: string; msg: string; fields?: Record<string, unknown> }

/** A logger that keeps what the adapter logs, for assertions. */
export function recorder(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => { lines.push({ level, msg, fields }); };
  return { lines, logger: { info: at("info"), warn: at("warn"), error: at("error") } };
}

/** A test file's evidentd processes and hooks, stopped and closed (in reverse) after its tests. */
export function harness() {
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => {});
    removeTmpDirs();
  });
  return {
    cleanups,
    async evidentd(dataDir = tmpDir("data")): Promise<Evidentd> {
      const d = await new Evidentd(dataDir).start();
      cleanups.push(() => d.stop());
      return d;
    },
    hooks(o: EvidentOptions) {
      const h = evidentHooks({ backoffMinMs: 20, backoffMaxMs: 300, ...o });
      cleanups.push(() => h.close());
      return h;
    },
  };
}
