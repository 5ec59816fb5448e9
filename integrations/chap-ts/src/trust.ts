// Trust files evident-trust/v1 (docs/trust.md).
import { readFileSync } from "node:fs";
import { parseCoseKey, type IssuerKey } from "./cose.ts";
import { b64decode, noteVerifier, type Verifier } from "./note.ts";
import { parsePolicy, type Policy } from "./policy.ts";

export interface Trust {
  origin: string;
  logKeys: Verifier[];
  issuers: Map<string, IssuerKey>; // by hex kid
  policy?: Policy;
}

const members = ["format", "origin", "log_keys", "log_mldsa_keys", "issuer_keys", "witness_policy"];
const keyMembers = ["kid", "cose_key", "not_before", "not_after"];

/** Reads a trust file: a path, its JSON text as a Buffer, or the parsed object. Throws when it is not one. */
export function loadTrust(src: string | Buffer | Record<string, unknown>): Trust {
  let obj: unknown = src;
  if (typeof src === "string") obj = JSON.parse(readFileSync(src, "utf8"));
  else if (Buffer.isBuffer(src)) obj = JSON.parse(src.toString("utf8"));
  return parseTrust(obj);
}

export function parseTrust(obj: unknown): Trust {
  const fail = (m: string): never => { throw new Error(`trust file: ${m}`); };
  if (typeof obj !== "object" || obj === null || Array.isArray(obj)) return fail("not a JSON object");
  const t = obj as Record<string, unknown>;
  for (const k of Object.keys(t)) if (!members.includes(k)) fail(`unknown member ${k}`);
  if (t.format !== "evident-trust/v1") fail(`format ${JSON.stringify(t.format)} is not evident-trust/v1`);
  if (typeof t.origin !== "string" || t.origin === "") fail("origin");
  const origin = t.origin as string;
  if (!Array.isArray(t.log_keys) || t.log_keys.length === 0) fail("log_keys: at least one");
  const logKeys: Verifier[] = [];
  for (const k of t.log_keys as unknown[]) {
    if (typeof k !== "string") fail("log_keys: not a string");
    let v: Verifier;
    try { v = noteVerifier(k as string); } catch (e) { return fail(`log key: ${(e as Error).message}`); }
    if (v.name !== origin) fail(`log key ${v.name} is not named for origin ${origin}`);
    if (logKeys.some((o) => o.keyHash === v.keyHash)) fail("log key listed twice");
    logKeys.push(v);
  }
  if (!Array.isArray(t.issuer_keys) || t.issuer_keys.length === 0) fail("issuer_keys: at least one");
  const issuers = new Map<string, IssuerKey>();
  for (const ik of t.issuer_keys as unknown[]) {
    if (typeof ik !== "object" || ik === null) fail("issuer key: not an object");
    const o = ik as Record<string, unknown>;
    for (const k of Object.keys(o)) if (!keyMembers.includes(k)) fail(`issuer key: unknown member ${k}`);
    const raw = typeof o.cose_key === "string" ? b64decode(o.cose_key) : undefined;
    if (!raw) fail("issuer key: cose_key is not base64");
    let key: IssuerKey;
    try { key = parseCoseKey(raw!); } catch (e) { return fail(`issuer key: ${(e as Error).message}`); }
    if (o.kid !== key.kid) fail(`issuer key: kid ${String(o.kid)} is not its thumbprint ${key.kid}`);
    if (issuers.has(key.kid)) fail(`issuer key ${key.kid} twice`);
    issuers.set(key.kid, key);
  }
  let policy: Policy | undefined;
  if (t.witness_policy !== undefined) {
    if (typeof t.witness_policy !== "string") fail("witness_policy: not a string");
    try { policy = parsePolicy(t.witness_policy as string); } catch (e) { return fail((e as Error).message); }
  }
  return { origin, logKeys, issuers, policy };
}
