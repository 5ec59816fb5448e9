// Test helpers: a real evidentd on loopback, the reference audit logs, and a stand-in that calls
// the hooks exactly as the reference Coordinator 0.2.10 does.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { gunzipSync } from "node:zlib";
import canonicalize from "canonicalize";
import type { AuditEntry, EvidentHooks, Workspace } from "../src/index.ts";

export const repoRoot = path.resolve(import.meta.dirname, "../../..");
export const vectors = path.join(repoRoot, "testvectors/chap-reference");

export function tmpDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `evident-chap-ts-${prefix}-`));
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
    const p = spawn(evidentdBin(), ["-data", this.dataDir, "-listen", "127.0.0.1:0", "-checkpoint-interval", "200ms", ...this.extraArgs], { stdio: ["ignore", "pipe", "pipe"] });
    this.proc = p;
    this.log = "";
    this.url = await new Promise<string>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error("evidentd did not start:\n" + this.log)), 20000);
      const onData = (d: Buffer) => {
        this.log += d.toString();
        const m = /msg="evidentd listening" addr=(http:\/\/127\.0\.0\.1:\d+)/.exec(this.log);
        if (m) { clearTimeout(t); resolve(m[1]); }
      };
      p.stdout!.on("data", onData);
      p.stderr!.on("data", onData);
      p.on("exit", (c) => { clearTimeout(t); reject(new Error(`evidentd exited ${c}:\n${this.log}`)); });
    });
    return this;
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
  constructor(id: string, public hooks: EvidentHooks) {
    this.ws = { id, audit: [], chain_head: null };
    this.listeners.push(hooks.onAudit);
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
