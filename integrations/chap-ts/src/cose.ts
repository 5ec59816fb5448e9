// COSE_Sign1 framing and decoding (RFC 9052), as Evident's Go package receipts reads it.
import { createHash, createPublicKey, verify as cryptoVerify, type KeyObject } from "node:crypto";
import { decode, encode, Tag } from "cbor2";

export const HeaderReceipts = 394;
export const HeaderVDS = 395;
export const HeaderVDP = 396;
export const HeaderSeq = -70001;
export const HeaderPrev = -70002;
export const HeaderCheckpoint = -70010;

export const MaxStatementSize = 4 << 20;
/** bound of an entry statement (a record up to 64 MiB, receipts.MaxEntryStatementSize) */
export const MaxEntryStatementSize = (64 << 20) + (1 << 20);
export const MaxReceiptSize = 64 << 10;
export const MaxCheckpointSize = 16 << 10;

export class Malformed extends Error {}

const decodeOpts = {
  preferMap: true,
  rejectDuplicateKeys: true,
  rejectStreaming: true,
  rejectUndefined: true,
  maxDepth: 32,
} as const;

/** Decodes one CBOR item that must fill `b` exactly (maps as Map, bstr as Uint8Array). */
export function cborDecode(b: Uint8Array): unknown {
  try {
    // a Node Buffer in gives Buffers out, which cbor2 would encode as objects: hand it a plain view
    const u = Buffer.isBuffer(b) ? new Uint8Array(b.buffer, b.byteOffset, b.length) : b;
    return decode(u, decodeOpts);
  } catch (e) {
    throw new Malformed(`CBOR: ${(e as Error).message}`);
  }
}

/** Deterministic encoding (RFC 8949 §4.2.1), as the Go side's CoreDetEncOptions. */
export function cborEncodeDet(v: unknown): Uint8Array {
  return encode(plain(v), { cde: true });
}

function plain(v: unknown): unknown {
  if (Buffer.isBuffer(v)) return new Uint8Array(v.buffer, v.byteOffset, v.length);
  if (Array.isArray(v)) return v.map(plain);
  if (v instanceof Map) return new Map([...v].map(([k, x]) => [plain(k), plain(x)]));
  return v;
}

/** Returns the offset just after the definite-length CBOR item starting at off. */
export function itemEnd(b: Uint8Array, off: number, depth = 0): number {
  if (depth > 64) throw new Malformed("CBOR nested too deep");
  if (off >= b.length) throw new Malformed("CBOR truncated");
  const ib = b[off];
  const mt = ib >> 5;
  const ai = ib & 0x1f;
  let p = off + 1;
  let n: number;
  if (ai < 24) n = ai;
  else if (ai === 24) { need(b, p, 1); n = b[p]; p += 1; }
  else if (ai === 25) { need(b, p, 2); n = (b[p] << 8) | b[p + 1]; p += 2; }
  else if (ai === 26) { need(b, p, 4); n = new DataView(b.buffer, b.byteOffset + p, 4).getUint32(0); p += 4; }
  else if (ai === 27) {
    need(b, p, 8);
    const big = new DataView(b.buffer, b.byteOffset + p, 8).getBigUint64(0);
    if (big > BigInt(Number.MAX_SAFE_INTEGER)) {
      if (mt === 0 || mt === 1 || mt === 7) return p + 8;
      throw new Malformed("CBOR length too large");
    }
    n = Number(big); p += 8;
  } else throw new Malformed("CBOR indefinite length or reserved value");
  switch (mt) {
    case 0: case 1: case 7: return p;
    case 2: case 3: need(b, p, n); return p + n;
    case 4: for (let i = 0; i < n; i++) p = itemEnd(b, p, depth + 1); return p;
    case 5: for (let i = 0; i < 2 * n; i++) p = itemEnd(b, p, depth + 1); return p;
    case 6: return itemEnd(b, p, depth + 1);
  }
  throw new Malformed("CBOR major type");
}

function need(b: Uint8Array, p: number, n: number) {
  if (p + n > b.length) throw new Malformed("CBOR truncated");
}

export interface Sign1 {
  raw: Uint8Array;
  /** The four raw items of the array: protected bstr item, unprotected map item, payload item, signature item. */
  items: [Uint8Array, Uint8Array, Uint8Array, Uint8Array];
  protectedBytes: Uint8Array; // the serialized protected header map (the bstr's content)
  protected: Map<unknown, unknown>;
  unprotected: Map<unknown, unknown>;
  payload: Uint8Array | null; // null when detached
  signature: Uint8Array;
}

/** Parses a tagged COSE_Sign1 (tag 18, array of 4) of at most max bytes. */
export function parseSign1(raw: Uint8Array, max: number, what: string): Sign1 {
  if (raw.length === 0 || raw.length > max) throw new Malformed(`${what}: size ${raw.length}`);
  if (raw[0] !== 0xd2 || raw[1] !== 0x84) throw new Malformed(`${what}: not a tagged COSE_Sign1`);
  const items: Uint8Array[] = [];
  let p = 2;
  for (let i = 0; i < 4; i++) {
    const e = itemEnd(raw, p);
    items.push(raw.subarray(p, e));
    p = e;
  }
  if (p !== raw.length) throw new Malformed(`${what}: bytes after the COSE_Sign1`);
  const whole = cborDecode(raw);
  if (!(whole instanceof Tag) || Number(whole.tag) !== 18 || !Array.isArray(whole.contents) || whole.contents.length !== 4) {
    throw new Malformed(`${what}: not a COSE_Sign1`);
  }
  const [pb, u, pl, sig] = whole.contents as unknown[];
  if (!(pb instanceof Uint8Array)) throw new Malformed(`${what}: protected header is not a bstr`);
  const prot = pb.length === 0 ? new Map() : cborDecode(pb);
  if (!(prot instanceof Map)) throw new Malformed(`${what}: protected header is not a map`);
  if (!(u instanceof Map)) throw new Malformed(`${what}: unprotected header is not a map`);
  if (!(pl === null || pl instanceof Uint8Array)) throw new Malformed(`${what}: payload`);
  if (!(sig instanceof Uint8Array)) throw new Malformed(`${what}: signature`);
  for (const k of u.keys()) if (prot.has(k)) throw new Malformed(`${what}: label ${String(k)} in both buckets`);
  return {
    raw, items: items as Sign1["items"], protectedBytes: pb, protected: prot, unprotected: u,
    payload: pl as Uint8Array | null, signature: sig,
  };
}

function bstrHead(n: number): Uint8Array {
  if (n < 24) return Uint8Array.of(0x40 | n);
  if (n < 0x100) return Uint8Array.of(0x58, n);
  if (n < 0x10000) return Uint8Array.of(0x59, n >> 8, n & 0xff);
  const h = new Uint8Array(5); h[0] = 0x5a; new DataView(h.buffer).setUint32(1, n); return h;
}

/** Sig_structure ["Signature1", protected, h'', payload] (RFC 9052 §4.4). */
export function sigStructure(protectedBytes: Uint8Array, payload: Uint8Array): Buffer {
  return Buffer.concat([
    Uint8Array.of(0x84, 0x6a), Buffer.from("Signature1"),
    bstrHead(protectedBytes.length), protectedBytes,
    Uint8Array.of(0x40),
    bstrHead(payload.length), payload,
  ]);
}

export interface IssuerKey {
  kid: string; // hex
  alg: -8 | -7;
  key: KeyObject;
}

/** Verifies a COSE_Sign1 signature under key with the given payload (attached or detached). */
export function verifySign1(m: Sign1, key: IssuerKey, payload: Uint8Array): boolean {
  const alg = m.protected.get(1);
  if (alg !== key.alg) return false;
  const data = sigStructure(m.protectedBytes, payload);
  try {
    if (alg === -8) return m.signature.length === 64 && cryptoVerify(null, data, key.key, m.signature);
    return m.signature.length === 64 && cryptoVerify("sha256", data, { key: key.key, dsaEncoding: "ieee-p1363" }, m.signature);
  } catch {
    return false;
  }
}

const b64u = (b: Uint8Array) => Buffer.from(b).toString("base64url");

/** Reads a public COSE_Key (Ed25519 OKP or P-256 EC2) and its RFC 9679 thumbprint (hex). */
export function parseCoseKey(raw: Uint8Array): IssuerKey {
  const m = cborDecode(raw);
  if (!(m instanceof Map)) throw new Malformed("COSE_Key is not a map");
  const kty = m.get(1), crv = m.get(-1), x = m.get(-2), y = m.get(-3);
  if (m.has(-4)) throw new Malformed("COSE_Key holds a private key");
  let key: KeyObject, alg: -8 | -7, thumb: Map<number, unknown>;
  if (kty === 1 && crv === 6 && x instanceof Uint8Array && x.length === 32) {
    key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: b64u(x) }, format: "jwk" });
    alg = -8;
    thumb = new Map<number, unknown>([[1, 1], [-1, 6], [-2, x]]);
  } else if (kty === 2 && crv === 1 && x instanceof Uint8Array && y instanceof Uint8Array && x.length === 32 && y.length === 32) {
    key = createPublicKey({ key: { kty: "EC", crv: "P-256", x: b64u(x), y: b64u(y) }, format: "jwk" });
    alg = -7;
    thumb = new Map<number, unknown>([[1, 2], [-1, 1], [-2, x], [-3, y]]);
  } else {
    throw new Malformed("COSE_Key: only Ed25519 (OKP) and P-256 (EC2) keys are supported");
  }
  const a = m.get(3);
  if (a !== undefined && a !== alg) throw new Malformed(`COSE_Key: alg ${String(a)} does not fit the key`);
  const kid = createHash("sha256").update(cborEncodeDet(thumb)).digest("hex");
  return { kid, alg, key };
}

export interface Claims { iss?: string; sub?: string; iat?: number }

export function claims(prot: Map<unknown, unknown>): Claims {
  const v = prot.get(15);
  if (v === undefined) return {};
  if (!(v instanceof Map)) throw new Malformed("CWT claims (15) must be a map");
  const c: Claims = {};
  const iss = v.get(1), sub = v.get(2), iat = v.get(6);
  if (iss !== undefined) { if (typeof iss !== "string") throw new Malformed("iss"); c.iss = iss; }
  if (sub !== undefined) { if (typeof sub !== "string") throw new Malformed("sub"); c.sub = sub; }
  if (iat !== undefined) { if (typeof iat !== "number") throw new Malformed("iat"); c.iat = iat; }
  return c;
}

/** The log entry of a statement: SHA-256 of it with its unprotected header replaced by {} (0xa0). */
export function entryHash(m: Sign1): Buffer {
  return createHash("sha256").update(Uint8Array.of(0xd2, 0x84)).update(m.items[0]).update(Uint8Array.of(0xa0))
    .update(m.items[2]).update(m.items[3]).digest();
}
