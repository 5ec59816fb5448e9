// C2SP signed notes (golang.org/x/mod/sumdb/note) and cosignature/v1 (C2SP tlog-cosignature),
// ported from note.Open and tlogpolicy/cosig.go.
import { createHash, createPublicKey, verify as cryptoVerify, type KeyObject } from "node:crypto";

export interface Verifier {
  name: string;
  keyHash: number;
  verify(msg: Buffer, sig: Buffer): boolean;
}

export class InvalidSignature extends Error {
  constructor(public signer: string) { super(`invalid signature by ${signer}`); }
}

const B64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Strict standard base64 (RFC 4648 §4, padded); undefined when it is not. */
export function b64decode(s: string): Buffer | undefined {
  if (typeof s !== "string" || !B64.test(s)) return undefined;
  const b = Buffer.from(s, "base64");
  return b.toString("base64") === s ? b : undefined;
}

export function validName(name: string): boolean {
  return name !== "" && !/\s/u.test(name) && !name.includes("+") && Buffer.from(name, "utf8").toString("utf8") === name;
}

export function keyHash(name: string, key: Uint8Array): number {
  return createHash("sha256").update(name + "\n").update(key).digest().readUInt32BE(0);
}

function ed25519Key(pub: Uint8Array): KeyObject {
  return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(pub).toString("base64url") }, format: "jwk" });
}

function splitVKey(vkey: string): { name: string; hash: number; key: Buffer } {
  // name+hash+key, cut at the first two '+' (the base64 key may hold more)
  const i = vkey.indexOf("+"), j = i < 0 ? -1 : vkey.indexOf("+", i + 1);
  if (i < 0 || j < 0) throw new Error("vkey: want name+hash+key");
  const name = vkey.slice(0, i), hash8 = vkey.slice(i + 1, j), k64 = vkey.slice(j + 1);
  const key = b64decode(k64);
  if (!validName(name) || !/^[0-9a-f]{8}$/.test(hash8) || !key || key.length < 2) throw new Error("vkey: malformed");
  return { name, hash: parseInt(hash8, 16), key };
}

/** A signed-note Ed25519 verifier key (type 0x01), as the log's checkpoint key. */
export function noteVerifier(vkey: string): Verifier {
  const { name, hash, key } = splitVKey(vkey);
  if (key[0] !== 0x01 || key.length !== 33) throw new Error("vkey: not an Ed25519 (0x01) key");
  if (keyHash(name, key) !== hash) throw new Error("vkey: key hash does not match");
  const pub = ed25519Key(key.subarray(1));
  return {
    name, keyHash: hash,
    verify: (msg, sig) => sig.length === 64 && cryptoVerify(null, msg, pub, sig),
  };
}

/** A cosigner's verifier key: 0x04 (or 0x01 read as 0x04) Ed25519; 0x06 ML-DSA-44 is parsed
 * but never verifies here (Node has no ML-DSA), so such a witness never counts. */
export function cosignatureVerifier(vkey: string): Verifier {
  const { name, key } = splitVKey(vkey);
  if (key[0] === 0x01 || key[0] === 0x04) {
    if (key.length !== 33) throw new Error("vkey: bad Ed25519 key length");
    const pub = ed25519Key(key.subarray(1));
    const kh = keyHash(name, Buffer.concat([Uint8Array.of(0x04), key.subarray(1)]));
    return {
      name, keyHash: kh,
      verify: (msg, sig) => {
        if (sig.length !== 8 + 64) return false;
        const t = sig.readBigUInt64BE(0);
        const m = Buffer.concat([Buffer.from(`cosignature/v1\ntime ${t}\n`), msg]);
        return cryptoVerify(null, m, pub, sig.subarray(8));
      },
    };
  }
  if (key[0] === 0x06 && key.length === 1 + 1312) {
    return { name, keyHash: keyHash(name, key), verify: () => false };
  }
  throw new Error("vkey: not a cosignature/v1 key");
}

export interface Note {
  text: string;
  sigs: { name: string; hash: number }[];
}

/** note.Open: the verified signatures of known verifiers; throws InvalidSignature when a known
 * verifier's signature does not verify, Error when malformed or when no known signature is there. */
export function openNote(msg: string, known: Verifier[]): Note {
  for (const ch of msg) {
    const c = ch.codePointAt(0)!;
    if ((c < 0x20 && c !== 0x0a) || c === 0xfffd) throw new Error("malformed note");
  }
  const split = msg.lastIndexOf("\n\n");
  if (split < 0) throw new Error("malformed note");
  const text = msg.slice(0, split + 1);
  let sigs = msg.slice(split + 2);
  if (sigs.length === 0 || !sigs.endsWith("\n")) throw new Error("malformed note");
  const textBytes = Buffer.from(text, "utf8");
  const out: Note = { text, sigs: [] };
  const seen = new Set<string>();
  let n = 0;
  while (sigs.length > 0) {
    const i = sigs.indexOf("\n");
    let line = sigs.slice(0, i);
    sigs = sigs.slice(i + 1);
    if (!line.startsWith("\u2014 ")) throw new Error("malformed note");
    line = line.slice(2);
    const sp = line.indexOf(" ");
    const name = sp < 0 ? line : line.slice(0, sp);
    const b64 = sp < 0 ? "" : line.slice(sp + 1);
    const sig = b64decode(b64);
    if (!sig || !validName(name) || b64 === "" || sig.length < 5) throw new Error("malformed note");
    if (++n > 100) throw new Error("malformed note");
    const hash = sig.readUInt32BE(0);
    const v = known.find((k) => k.name === name && k.keyHash === hash);
    if (!v) continue;
    const id = `${name}\u0000${hash}`;
    if (seen.has(id)) continue;
    seen.add(id);
    if (!v.verify(textBytes, sig.subarray(4))) throw new InvalidSignature(name);
    out.sigs.push({ name, hash });
  }
  if (out.sigs.length === 0) throw new Error("note has no verifiable signature");
  return out;
}
