// Drives the CHAP reference TypeScript coordinator (packages/coordinator/src)
// in-process through the journeys in journeys.plan.json and writes what it
// returned. Usage: tsx journeys.ts [--live] <chap-checkout> <plan.json> <out-dir>
// Deterministic: fixed-seed Ed25519 keys, a fixed client clock, and the
// coordinator's own deterministicIds/deterministicClock options.
// --live: only the journeys marked "live" in the plan, run once the way a real
// deployment runs: the coordinator's own clock and random ids (no deterministic
// options), random Ed25519 seeds (recorded in keys.json), the client's ts and
// envelope ids from the wall clock.
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const args = process.argv.slice(2);
const live = args[0] === "--live";
if (live) args.shift();
const [chapDir, planPath, outDir] = args;
if (!chapDir || !planPath || !outDir || args.length !== 3) {
  console.error("usage: tsx journeys.ts [--live] <chap-checkout> <plan.json> <out-dir>");
  process.exit(2);
}
const src = resolve(chapDir, "packages/coordinator/src");
const imp = (f: string) => import(pathToFileURL(join(src, f)).href);

async function main(): Promise<void> {
const { Coordinator } = await imp("coordinator.ts");
const { canonicalize } = await imp("canonical.ts");
const { privateKeyFromSeed, publicKeyBytes, b64urlNoPad, signEnvelope } = await imp("crypto.ts");

type Json = any;
const plan: Json = JSON.parse(readFileSync(planPath, "utf-8"));
const SEED_PREFIX = "evident/chap-reference/v1:";

// ---- keys ---------------------------------------------------------------
// Fixed seeds, or (live) fresh random seeds for every journey.
let keys = new Map<string, { seedHex: string; priv: unknown; jwk: Json }>();
function makeKeys(): void {
  keys = new Map();
  for (const names of Object.values(plan.keys) as string[][]) {
    for (const name of names) {
      const seed = live ? randomBytes(32) : createHash("sha256").update(SEED_PREFIX + name, "utf-8").digest();
      const priv = privateKeyFromSeed(seed);
      const jwk = { kty: "OKP", crv: "Ed25519", kid: name, x: b64urlNoPad(publicKeyBytes(priv)), use: "sig", alg: "EdDSA" };
      keys.set(name, { seedHex: seed.toString("hex"), priv, jwk });
    }
  }
}

// ---- client ids and clock -----------------------------------------------
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
function enc(v: bigint, len: number): string {
  let s = "";
  for (let i = 0; i < len; i++) { s = CROCKFORD[Number(v & 31n)] + s; v >>= 5n; }
  return s;
}
function clientUlid(ms: number, journey: string, n: number): string {
  const r = createHash("sha256").update(`${journey}/${n}`, "utf-8").digest().subarray(0, 10);
  let rand = 0n;
  for (const b of r) rand = (rand << 8n) | BigInt(b);
  return enc(BigInt(ms), 10) + enc(rand, 16);
}
function liveUlid(ms: number): string {
  let rand = 0n;
  for (const b of randomBytes(10)) rand = (rand << 8n) | BigInt(b);
  return enc(BigInt(ms), 10) + enc(rand, 16);
}
const clockStart = Date.parse(plan.client_clock.start);
const stepMs: number = plan.client_clock.step_ms;

// ---- generated values -----------------------------------------------------
// {"$nest": {"depth": N, "key": K, "leaf": V}}: N nested objects {K: ...} (arrays
// [...] when K is null) around V. {"$text": {"bytes": N, "line": S}}: ASCII text
// of exactly N bytes, lines "<7-digit line number> S\n" repeated and cut at N.
function nest(spec: Json, results: Map<string, Json>): Json {
  let v: Json = resolveRefs(spec.leaf ?? null, results);
  for (let i = 0; i < spec.depth; i++) v = spec.key === null ? [v] : { [spec.key]: v };
  return v;
}
function text(spec: Json): string {
  if (!/^[\x20-\x7e]*$/.test(spec.line)) throw new Error("$text line must be printable ASCII");
  const parts: string[] = [];
  let len = 0;
  for (let i = 1; len < spec.bytes; i++) {
    const l = String(i).padStart(7, "0") + " " + spec.line + "\n";
    parts.push(l);
    len += l.length;
  }
  return parts.join("").slice(0, spec.bytes);
}

// ---- refs ---------------------------------------------------------------
function getPath(obj: Json, path: string[]): Json {
  let cur = obj;
  for (const p of path) {
    if (cur === undefined || cur === null) throw new Error(`unresolved ref at ${p}`);
    cur = cur[p];
  }
  return cur;
}
function resolveRefs(v: Json, results: Map<string, Json>): Json {
  if (typeof v === "string") {
    if (v.startsWith("$r:")) {
      const [label, ...path] = v.slice(3).split(".");
      const res = results.get(label);
      if (res === undefined) throw new Error(`no result for label ${label}`);
      return getPath(res, path);
    }
    if (v.startsWith("$jwk:")) return { ...keys.get(v.slice(5))!.jwk };
    if (v.startsWith("$jwks:")) return { keys: [{ ...keys.get(v.slice(6))!.jwk }] };
    if (v.startsWith("$kid:")) return keys.get(v.slice(5))!.jwk.kid;
    return v;
  }
  if (Array.isArray(v)) return v.map((x) => resolveRefs(x, results));
  if (v && typeof v === "object") {
    const ks = Object.keys(v);
    if (ks.length === 1 && ks[0] === "$nest") return nest(v.$nest, results);
    if (ks.length === 1 && ks[0] === "$text") return text(v.$text);
    const o: Json = {};
    for (const k of Object.keys(v)) o[k] = resolveRefs(v[k], results);
    return o;
  }
  return v;
}

const dump = (v: Json) => JSON.stringify(v) + "\n";
mkdirSync(outDir, { recursive: true });

for (const j of plan.journeys) {
  if (live && !j.live) continue;
  makeKeys();
  const coord = new Coordinator(live ? { requireSignatures: true }
    : { deterministicIds: true, deterministicClock: true, requireSignatures: true });
  const current = new Map<string, string>();
  for (const alias of Object.keys(plan.keys)) current.set(alias, plan.keys[alias][0]);
  const results = new Map<string, Json>();
  const lines: string[] = [];
  const used = new Set<string>();
  let n = 0;

  const send = (step: Json): Json => {
    n += 1;
    const alias: string = step.as;
    const who = plan.participants[alias];
    used.add(alias);
    const ms = live ? Date.now() : clockStart + n * stepMs;
    const ts: string = step.ts ?? new Date(ms).toISOString();
    const given = resolveRefs(step.params ?? {}, results);
    const params: Json = { workspace: j.workspace, from: who.uri };
    if ("to" in given) params.to = given.to;
    params.ts = ts;
    for (const k of Object.keys(given)) if (k !== "to") params[k] = given[k];
    const env: Json = { jsonrpc: "2.0", id: live ? liveUlid(ms) : clientUlid(ms, j.name, n), method: step.method, params };
    const keyName: string = step.key ?? current.get(alias)!;
    if (step.sign !== "none") {
      const k = keys.get(keyName)!;
      env.sig = signEnvelope(canonicalize(env), k.priv, k.jwk.kid);
    }
    if (step.sign === "tamper") Object.assign(env.params, step.tamper);
    const sent = JSON.stringify(env); // bytes as sent, before the coordinator can touch the object
    let reply: Json;
    try {
      reply = coord.dispatch(JSON.parse(sent));
    } catch (e) {
      // Not a JSON-RPC answer: dispatch itself threw (recorded as such).
      reply = { thrown: String(e) };
    }
    const accepted = reply.error === undefined && reply.thrown === undefined;
    if (accepted && step.label) results.set(step.label, reply.result);
    if (accepted && step.then_current) current.set(alias, step.then_current);
    // expect: "ok", "error", "thrown", or {"ts": ..., "py": ...} when the two differ.
    const expect: string = (step.expect && typeof step.expect === "object" ? step.expect.ts : step.expect) ?? "ok";
    if ((expect === "ok") !== accepted || (expect === "thrown") !== (reply.thrown !== undefined)) {
      console.error(`[ts ${j.name} #${n}] ${step.method}: expected ${expect}, got ${JSON.stringify(reply)}`);
    }
    const meta: Json = { step: n, method: step.method, as: who.uri, key: step.sign === "none" ? null : keyName };
    if (step.note) meta.note = step.note;
    meta.expect = expect;
    meta.accepted = accepted;
    lines.push(JSON.stringify(meta).slice(0, -1) + `,"envelope":${sent},"response":${JSON.stringify(reply)}}`);
    return reply;
  };

  for (const step of j.steps) send(step);
  const reader = j.reader;
  const audit = send({ method: "audit.read", as: reader, note: "final read: whole audit log" });
  const describe = send({ method: "workspace.describe", as: reader, note: "final read" });
  const verify = send({ method: "audit.verify_chain", as: reader, note: "final read" });

  writeFileSync(join(outDir, `${j.name}.requests.jsonl`), lines.join("\n") + "\n");
  writeFileSync(join(outDir, `${j.name}.audit.json`), dump(audit.result));
  writeFileSync(join(outDir, `${j.name}.audit.jsonl`), audit.result.entries.map((e: Json) => JSON.stringify(e) + "\n").join(""));
  writeFileSync(join(outDir, `${j.name}.describe.json`), dump(describe.result));
  writeFileSync(join(outDir, `${j.name}.verify_chain.json`), dump(verify.error === undefined ? verify.result : { error: verify.error }));

  const parts: Json = {};
  for (const alias of Object.keys(plan.participants)) {
    if (!used.has(alias)) continue;
    parts[alias] = {
      uri: plan.participants[alias].uri,
      type: plan.participants[alias].type,
      current_key: current.get(alias),
      keys: plan.keys[alias].map((name: string) => ({ name, kid: keys.get(name)!.jwk.kid, seed_hex: keys.get(name)!.seedHex, jwk: keys.get(name)!.jwk })),
    };
  }
  writeFileSync(join(outDir, `${j.name}.keys.json`), JSON.stringify({
    workspace: j.workspace,
    seed_derivation: live ? "random: 32 bytes from crypto.randomBytes when the journey was recorded (seed_hex below)" : plan.seed_derivation,
    signing: "sig = \"ed25519:\" + kid + \":\" + base64(Ed25519(seed, JCS(envelope without sig)))",
    participants: parts,
  }, null, 2) + "\n");
}
}

main().catch((e) => { console.error(e); process.exit(1); });
