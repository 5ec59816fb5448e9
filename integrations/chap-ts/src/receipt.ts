// Offline verification of entry receipts evident-entry-receipt/v1 (docs/entry-receipt.md, "Verifying").
import { createHash } from "node:crypto";
import {
  claims, cborDecode, cborEncodeDet, entryHash, HeaderCheckpoint, HeaderPrev, HeaderReceipts, HeaderSeq,
  HeaderVDP, HeaderVDS, Malformed, MaxCheckpointSize, MaxEntryStatementSize, MaxReceiptSize, MaxStatementSize, parseSign1, verifySign1,
  type IssuerKey, type Sign1,
} from "./cose.ts";
import { b64decode, openNote } from "./note.ts";
import { evaluatePolicy } from "./policy.ts";
import type { Trust } from "./trust.ts";

export const ReceiptFormat = "evident-entry-receipt/v1";
export const SealContentType = "application/evident-seal+json;version=1";
const receiptMembers = ["format", "chain", "seq", "statement", "seal", "checkpoint"];
const sealMembers = ["chain", "profile", "size", "head", "root", "closed", "prev_seal", "sealed_at"];
const LINK = /^sha256:[0-9a-f]{64}$/;

export class ReceiptError extends Error {}
const fail = (m: string): never => { throw new ReceiptError(m); };

const sha256 = (...parts: Uint8Array[]) => { const h = createHash("sha256"); for (const p of parts) h.update(p); return h.digest(); };
const hashChildren = (l: Uint8Array, r: Uint8Array) => sha256(Uint8Array.of(1), l, r);

interface Inclusion { treeSize: bigint; leafIndex: bigint; path: Uint8Array[] }

/** RFC 9162 root from an inclusion proof (transparency-dev/merkle RootFromInclusionProof). */
export function rootFromInclusion(p: Inclusion, leaf: Uint8Array): Buffer {
  if (p.leafIndex >= p.treeSize) fail("leaf index not below tree size");
  const inner = bitLen(p.leafIndex ^ (p.treeSize - 1n));
  const border = onesCount(p.leafIndex >> BigInt(inner));
  if (p.path.length !== inner + border) fail(`inclusion path has ${p.path.length} hashes, want ${inner + border}`);
  let h: Buffer = Buffer.from(leaf);
  for (let i = 0; i < inner; i++) {
    h = ((p.leafIndex >> BigInt(i)) & 1n) === 0n ? hashChildren(h, p.path[i]) : hashChildren(p.path[i], h);
  }
  for (let i = inner; i < p.path.length; i++) h = hashChildren(p.path[i], h);
  return h;
}
const bitLen = (x: bigint) => x.toString(2).replace(/^0+/, "").length;
const onesCount = (x: bigint) => [...x.toString(2)].filter((c) => c === "1").length;

function toBig(v: unknown): bigint {
  if (typeof v === "number" && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  if (typeof v === "bigint" && v >= 0n && v < 1n << 64n) return v;
  return fail("proof: not an unsigned integer");
}

/** The receipt's one inclusion proof (RFC 9942, vdp -1), its encoding checked deterministic. */
function parseReceipt(m: Sign1, what: string): Inclusion {
  if (m.protected.get(HeaderVDS) !== 1) fail(`${what}: vds (395) is not RFC9162_SHA256`);
  if (m.payload !== null) fail(`${what}: payload must be detached`);
  for (const k of m.unprotected.keys()) {
    if (k !== HeaderVDP && k !== HeaderCheckpoint) fail(`${what}: unexpected unprotected label ${String(k)}`);
  }
  const vdp = m.unprotected.get(HeaderVDP);
  if (!(vdp instanceof Map) || vdp.size !== 1) fail(`${what}: vdp (396) must hold one inclusion proof`);
  const list = (vdp as Map<unknown, unknown>).get(-1);
  if (!Array.isArray(list) || list.length !== 1 || !(list[0] instanceof Uint8Array)) fail(`${what}: want exactly one inclusion proof`);
  const enc = (list as Uint8Array[])[0];
  if (enc.length === 0 || enc[0] !== 0x83) fail(`${what}: proof must be an array of 3`);
  const d = cborDecode(enc);
  if (!Array.isArray(d) || d.length !== 3 || !Array.isArray(d[2])) fail(`${what}: proof shape`);
  const [a, b, path] = d as [unknown, unknown, unknown[]];
  if (path.length > 130 || !path.every((h) => h instanceof Uint8Array && h.length === 32)) fail(`${what}: proof path`);
  const p = { treeSize: toBig(a), leafIndex: toBig(b), path: path as Uint8Array[] };
  const canon = cborEncodeDet([a, b, path]);
  if (!Buffer.from(canon).equals(Buffer.from(enc))) fail(`${what}: proof is not in deterministic encoding`);
  return p;
}

function issuer(trust: Trust, m: Sign1, what: string): IssuerKey {
  const kid = m.protected.get(4);
  if (!(kid instanceof Uint8Array) || kid.length === 0) return fail(`${what}: no kid`);
  const k = trust.issuers.get(Buffer.from(kid).toString("hex"));
  if (!k) return fail(`${what}: kid ${Buffer.from(kid).toString("hex")} is not an issuer key of the trust file`);
  return k;
}

function oneReceipt(m: Sign1, what: string): Uint8Array {
  for (const k of m.unprotected.keys()) if (k !== HeaderReceipts) fail(`${what}: unexpected unprotected label ${String(k)}`);
  const r = m.unprotected.get(HeaderReceipts);
  if (!Array.isArray(r) || r.length !== 1 || !(r[0] instanceof Uint8Array)) fail(`${what}: header 394 must hold exactly one receipt`);
  return (r as Uint8Array[])[0];
}

function strictJSONObject(b: Uint8Array): Record<string, unknown> {
  const s = new TextDecoder("utf-8", { fatal: true }).decode(b);
  const v = JSON.parse(s);
  if (typeof v !== "object" || v === null || Array.isArray(v)) fail("seal: payload is not an object");
  return v as Record<string, unknown>;
}

export interface Verified { chain: string; seq: number; payload: Buffer; link: string }

/** Checks an entry receipt against pinned trust; throws ReceiptError (or Malformed) saying why not. */
export function verifyEntryReceipt(receipt: unknown, trust: Trust): Verified {
  // 1. the object
  if (typeof receipt !== "object" || receipt === null || Array.isArray(receipt)) fail("not a JSON object");
  const r = receipt as Record<string, unknown>;
  if (typeof r.format === "string" && r.format !== ReceiptFormat && r.format.startsWith("evident-entry-receipt/")) {
    fail(`format ${r.format} was made by a newer Evident: upgrade`);
  }
  if (r.format !== ReceiptFormat) fail("format is not evident-entry-receipt/v1");
  const keys = Object.keys(r);
  if (keys.length !== receiptMembers.length || !receiptMembers.every((k) => keys.includes(k))) fail("members");
  const chain = r.chain, seq = r.seq, cp = r.checkpoint;
  if (typeof chain !== "string" || chain === "") return fail("chain");
  if (typeof seq !== "number" || !Number.isSafeInteger(seq) || seq < 0) return fail("seq");
  if (typeof cp !== "string" || Buffer.byteLength(cp) > MaxCheckpointSize) return fail("checkpoint");
  const stRaw = typeof r.statement === "string" ? b64decode(r.statement) : undefined;
  const sealRaw = typeof r.seal === "string" ? b64decode(r.seal) : undefined;
  if (!stRaw) return fail("statement is not base64");
  if (!sealRaw) return fail("seal is not base64");

  // 2. the entry statement
  const st = parseSign1(stRaw, MaxEntryStatementSize, "entry statement");
  const stKey = issuer(trust, st, "entry statement");
  if (st.payload === null) return fail("entry statement: detached payload");
  if (!verifySign1(st, stKey, st.payload)) fail("entry statement: signature does not verify");
  if (claims(st.protected).sub !== chain) fail("entry statement: CWT sub is not the chain");
  if (st.protected.get(HeaderSeq) !== seq) fail("entry statement: seq (-70001) is not the receipt's seq");
  const prev = st.protected.get(HeaderPrev);
  if (typeof prev !== "string" || !LINK.test(prev)) return fail("entry statement: prev (-70002) is not a link");
  const link = sha256(st.payload, Buffer.from(prev, "utf8"));
  const leaf = sha256(Uint8Array.of(0), link);

  // 3. the chain receipt
  const cr = parseSign1(oneReceipt(st, "entry statement"), MaxReceiptSize, "chain receipt");
  const crIncl = parseReceipt(cr, "chain receipt");
  if (crIncl.leafIndex !== BigInt(seq)) fail("chain receipt: leaf index is not seq");
  const rootC = rootFromInclusion(crIncl, leaf);
  if (!verifySign1(cr, issuer(trust, cr, "chain receipt"), rootC)) fail("chain receipt: signature does not verify");
  if (claims(cr.protected).sub !== chain) fail("chain receipt: CWT sub is not the chain");

  // 4. the seal
  const seal = parseSign1(sealRaw, MaxStatementSize, "seal");
  if (seal.payload === null) return fail("seal: detached payload");
  if (!verifySign1(seal, issuer(trust, seal, "seal"), seal.payload)) fail("seal: signature does not verify");
  if (seal.protected.get(3) !== SealContentType) fail("seal: content type");
  if (claims(seal.protected).sub !== chain) fail("seal: CWT sub is not the chain");
  const s = strictJSONObject(seal.payload);
  const sk = Object.keys(s);
  if (sk.length !== sealMembers.length || !sealMembers.every((k) => sk.includes(k))) fail("seal: members");
  if (s.chain !== chain) fail("seal: chain");
  if (typeof s.size !== "number" || BigInt(s.size) !== crIncl.treeSize) fail("seal: size is not the chain receipt's tree size");
  if (s.root !== "sha256:" + rootC.toString("hex")) fail("seal: root is not the chain receipt's root");
  if (BigInt(seq) === crIncl.treeSize - 1n && s.head !== "sha256:" + link.toString("hex")) fail("seal: head is not the entry's link");

  // 5. the log receipt
  const lr = parseSign1(oneReceipt(seal, "seal"), MaxReceiptSize, "log receipt");
  const lrIncl = parseReceipt(lr, "log receipt");
  const rootL = rootFromInclusion(lrIncl, sha256(Uint8Array.of(0), entryHash(seal)));
  if (!verifySign1(lr, issuer(trust, lr, "log receipt"), rootL)) fail("log receipt: signature does not verify");
  const informative = lr.unprotected.get(HeaderCheckpoint);
  if (informative !== undefined && !(informative instanceof Uint8Array && Buffer.from(informative).toString("utf8") === cp)) {
    fail("log receipt: the checkpoint it repeats (-70010) is not the receipt's checkpoint");
  }

  // 6. the checkpoint
  // as tlog.ParseCheckpoint with each log key in turn: one key's valid signature suffices
  let note: ReturnType<typeof openNote> | undefined;
  let why = "no log key";
  for (const k of trust.logKeys) {
    try { note = openNote(cp, [k]); break; } catch (e) { why = (e as Error).message; }
  }
  if (!note) return fail(`checkpoint: ${why}`);
  const lines = note.text.split("\n");
  if (lines.length < 4 || lines[0] !== trust.origin) fail("checkpoint: origin is not the trust file's");
  if (!/^(0|[1-9][0-9]*)$/.test(lines[1]) || BigInt(lines[1]) !== lrIncl.treeSize) fail("checkpoint: size is not the log receipt's tree size");
  const root = b64decode(lines[2]);
  if (!root || !root.equals(rootL)) fail("checkpoint: root hash is not the log receipt's root");
  if (trust.policy) {
    const ev = evaluatePolicy(trust.policy, cp);
    if (ev.invalid.length > 0) fail(`checkpoint: invalid cosignature by ${ev.invalid.join(", ")}`);
    if (!ev.satisfied) fail("checkpoint: witness quorum not satisfied");
  }
  return { chain, seq, payload: Buffer.from(st.payload), link: "sha256:" + link.toString("hex") };
}

/** verifyScittReceipt's answer: true or false, never a throw for a bad receipt. */
export function receiptValid(receipt: unknown, trust: Trust): boolean {
  try {
    verifyEntryReceipt(receipt, trust);
    return true;
  } catch (e) {
    if (e instanceof ReceiptError || e instanceof Malformed || e instanceof Error) return false;
    return false;
  }
}

/** The entry statement's payload of a receipt, unverified (what the submitter compares). */
export function receiptPayload(receipt: unknown): Buffer | undefined {
  try {
    const r = receipt as Record<string, unknown>;
    const raw = b64decode(r.statement as string);
    if (!raw) return undefined;
    const st = parseSign1(raw, MaxEntryStatementSize, "entry statement");
    return st.payload ? Buffer.from(st.payload) : undefined;
  } catch {
    return undefined;
  }
}
