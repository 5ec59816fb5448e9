// The child host of the TypeScript CHAP reference Coordinator (packages/coordinator/src)
// for anchored.py, which drives it. Run under Node >= 20 with tsx's loader:
//   node --import <tsx>/dist/loader.mjs anchored.ts <chap-checkout> <options-json>
// (node itself, not the tsx CLI: the CLI runs the script in a grandchild, which a SIGKILL
// of the child would not reach). options: {store: "memory" | {json: dir}, evident: null |
// {url, trust, spoolDir}}.
// Reads JSON lines on stdin, writes one JSON line per input on stdout:
//   a JSON-RPC envelope -> {r: <dispatch reply>, us: <dispatch µs>, t: <epoch ms when
//                           dispatch returned>, ws, seq: <seq it appended, or null>}
//   {"$ctl": "flush"}   -> {ctl, ok, ms}            (the adapter's flush())
//   {"$ctl": "close"}   -> {ctl, ok, ms}, then exits (the adapter's close())
//   {"$ctl": "audit_len", ws} -> {ctl, ws, len, head}
// The store is a JSON-file implementation of the Coordinator's Store interface
// (storage/store.ts): one file per workspace, written to a temporary file, fsynced, renamed
// over the old one, directory fsynced (the in-tree SqliteStore needs better-sqlite3).
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, writeSync } from "node:fs";
import { join, resolve, dirname } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";

const [chapDir, optsJson] = process.argv.slice(2);
if (!chapDir || !optsJson) {
  console.error("usage: node --import <tsx loader> anchored.ts <chap-checkout> <options-json>");
  process.exit(2);
}
const opts = JSON.parse(optsJson);
const here = dirname(fileURLToPath(import.meta.url));
const src = resolve(chapDir, "packages/coordinator/src");

class JsonFileStore {
  constructor(private dir: string) { mkdirSync(dir, { recursive: true }); }
  private file(id: string): string { return join(this.dir, encodeURIComponent(id) + ".json"); }
  load(): any[] {
    const out: any[] = [];
    for (const f of readdirSync(this.dir)) {
      if (!f.endsWith(".json")) continue;
      out.push(JSON.parse(readFileSync(join(this.dir, f), "utf-8")));
    }
    return out;
  }
  save(record: any): void {
    const path = this.file(record.id);
    const tmp = path + ".tmp";
    const fd = openSync(tmp, "w");
    try {
      writeSync(fd, JSON.stringify(record));
      fsyncSync(fd);
    } finally { closeSync(fd); }
    renameSync(tmp, path);
    const dfd = openSync(this.dir, "r");
    try { fsyncSync(dfd); } finally { closeSync(dfd); }
  }
  delete(_id: string): void { /* not in v0.2 */ }
  close(): void { /* nothing held open */ }
}

async function main(): Promise<void> {
  const { Coordinator } = await import(pathToFileURL(join(src, "coordinator.ts")).href);
  const coordOpts: any = { enableChain: true, requireSignatures: true };
  if (opts.store !== "memory") coordOpts.store = new JsonFileStore(opts.store.json);
  let hooks: any = null;
  if (opts.evident) {
    const adapter = resolve(here, "../../integrations/chap-ts/src/index.ts");
    const { evidentHooks } = await import(pathToFileURL(adapter).href);
    hooks = evidentHooks({ url: opts.evident.url, trust: opts.evident.trust, spoolDir: opts.evident.spoolDir });
    // Entries ship once the Coordinator's store saved them (the listener runs before the save).
    if (coordOpts.store) coordOpts.store = hooks.wrapStore(coordOpts.store);
    coordOpts.onAudit = hooks.onAudit;
    coordOpts.scittSubmitter = hooks.scittSubmitter;
    coordOpts.verifyScittReceipt = hooks.verifyScittReceipt;
  }
  const coord = new Coordinator(coordOpts);
  // 0.2.10's constructor hands each stored record to restore([record]), and restore() clears
  // every workspace first: with more than one workspace in the store only the last one loaded
  // survives a restart. The host restores them all at once (the snapshot format restore() takes).
  const startup: any = { store_records: 0, restored_by_constructor: coord.workspaces.size, restored_by_host: null };
  if (coordOpts.store) {
    const records = coordOpts.store.load();
    startup.store_records = records.length;
    if (coord.workspaces.size < records.length) {
      coord.restore(records.map((r: any) => r.data));
      startup.restored_by_host = coord.workspaces.size;
    }
  }
  const out = (v: unknown) => process.stdout.write(JSON.stringify(v) + "\n");
  const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    if (!line.trim()) continue;
    const msg = JSON.parse(line);
    if (msg.$ctl !== undefined) {
      const t0 = performance.now();
      if (msg.$ctl === "flush" || msg.$ctl === "close") {
        let ok = true, err: string | undefined;
        try { if (hooks) await (msg.$ctl === "flush" ? hooks.flush() : hooks.close()); }
        catch (e) { ok = false; err = String(e); }
        out({ ctl: msg.$ctl, ok, err, ms: performance.now() - t0 });
        if (msg.$ctl === "close") { rl.close(); break; }
      } else if (msg.$ctl === "startup") {
        out({ ctl: msg.$ctl, ...startup });
      } else if (msg.$ctl === "audit_len") {
        const ws = coord.workspaces.get(msg.ws);
        out({ ctl: msg.$ctl, ws: msg.ws, len: ws ? ws.audit.length : null, head: ws ? ws.chain_head ?? null : null });
      } else {
        out({ ctl: msg.$ctl, ok: false, err: "unknown control" });
      }
      continue;
    }
    const wsId = msg.params?.workspace;
    const before = coord.workspaces.get(wsId)?.audit.length ?? 0;
    const t0 = process.hrtime.bigint();
    let r: any;
    try { r = coord.dispatch(msg); } catch (e) { r = { thrown: String(e) }; }
    const t1 = process.hrtime.bigint();
    const t = Date.now();
    const after = coord.workspaces.get(wsId)?.audit.length ?? 0;
    out({ r, us: Number(t1 - t0) / 1000, t, ws: wsId, seq: after > before ? after - 1 : null });
  }
  process.exit(0);
}

main().catch((e) => { console.error(e); process.exit(1); });
