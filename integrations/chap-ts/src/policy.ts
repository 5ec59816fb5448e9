// Witness policies in the C2SP tlog-policy text format: a port of tlogpolicy.Parse and
// Policy.Evaluate (without freshness: every valid cosignature counts).
import { cosignatureVerifier, noteVerifier, openNote, InvalidSignature, type Verifier } from "./note.ts";

export interface Policy {
  witnesses: { name: string; verifier: Verifier }[];
  groups: { name: string; threshold: number; members: string[] }[];
  quorum: string;
}

const keywords = new Set(["witness", "group", "any", "all", "none", "quorum", "log"]);

export function parsePolicy(text: string): Policy {
  if (Buffer.byteLength(text) > 1 << 20) throw new Error("tlog-policy: too large");
  const p: Policy = { witnesses: [], groups: [], quorum: "" };
  const names = new Set<string>();
  let quorums = 0;
  const lines = text.split("\n");
  lines.forEach((raw, idx) => {
    const fail = (m: string) => { throw new Error(`tlog-policy: line ${idx + 1}: ${m}`); };
    let line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    const h = line.indexOf("#");
    if (h >= 0) line = line.slice(0, h);
    const f = line.split(/\s+/u).filter((s) => s !== "");
    if (f.length === 0) return;
    const checkName = (n: string) => {
      if (keywords.has(n)) fail(`name ${n} is a keyword`);
      if (names.has(n)) fail(`name ${n} defined twice`);
    };
    switch (f[0]) {
      case "log":
        if (f.length < 2 || f.length > 3) fail("want: log <vkey> [<url>]");
        try { noteVerifier(f[1]); } catch (e) { fail(`log key: ${(e as Error).message}`); }
        break;
      case "witness": {
        if (f.length < 3 || f.length > 4) fail("want: witness <name> <vkey> [<url>]");
        checkName(f[1]);
        let v: Verifier;
        try { v = cosignatureVerifier(f[2]); } catch { return fail(`witness ${f[1]}: not a cosignature/v1 key`); }
        names.add(f[1]);
        p.witnesses.push({ name: f[1], verifier: v });
        break;
      }
      case "group": {
        if (f.length < 4) fail("want: group <name> <k|any|all> <member>...");
        checkName(f[1]);
        const members = f.slice(3);
        let t: number;
        if (f[2] === "any") t = 1;
        else if (f[2] === "all") t = members.length;
        else {
          if (!/^[1-9][0-9]{0,2}$/.test(f[2]) || Number(f[2]) > 255) fail(`threshold ${f[2]}`);
          t = Number(f[2]);
        }
        if (t > members.length) fail(`threshold ${t} above its ${members.length} member(s)`);
        const seen = new Set<string>();
        for (const m of members) {
          if (!names.has(m)) fail(`member ${m} is not defined above`);
          if (seen.has(m)) fail(`member ${m} listed twice`);
          seen.add(m);
        }
        names.add(f[1]);
        p.groups.push({ name: f[1], threshold: t, members });
        break;
      }
      case "quorum":
        if (f.length !== 2) fail("want: quorum <name|none>");
        if (++quorums > 1) fail("a second quorum line");
        if (f[1] !== "none" && !names.has(f[1])) fail(`quorum ${f[1]} is not defined above`);
        p.quorum = f[1];
        break;
      default:
        fail(`unknown keyword ${f[0].slice(0, 40)}`);
    }
  });
  if (p.quorum === "") throw new Error("tlog-policy: no quorum line");
  return p;
}

export interface Evaluation { satisfied: boolean; cosigned: string[]; invalid: string[] }

export function evaluatePolicy(p: Policy, checkpoint: string): Evaluation {
  const counted = new Set<string>();
  const invalid: string[] = [];
  for (const w of p.witnesses) {
    try {
      const n = openNote(checkpoint, [w.verifier]);
      if (n.sigs.length > 0) counted.add(w.name);
    } catch (e) {
      if (e instanceof InvalidSignature) invalid.push(w.name);
    }
  }
  const satisfied = (name: string, depth: number): boolean => {
    if (name === "none") return true;
    if (depth > p.groups.length + 1) return false;
    if (counted.has(name)) return true;
    const g = p.groups.find((g) => g.name === name);
    if (!g) return false;
    return g.members.filter((m) => satisfied(m, depth + 1)).length >= g.threshold;
  };
  return { satisfied: satisfied(p.quorum, 0), cosigned: [...counted].sort(), invalid: invalid.sort() };
}
