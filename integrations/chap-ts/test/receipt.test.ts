// The offline verifier against the shared vectors (testvectors/entry-receipt/, a live evidentd
// witnessed by two witnesses) and against tampering.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import * as zlib from "node:zlib";
import { loadTrust, verifyEntryReceipt } from "../src/index.ts";
import { receiptValid } from "../src/receipt.ts";
import { evaluatePolicy, parsePolicy } from "../src/policy.ts";
import { repoRoot } from "./helpers.ts";
import { flip, positions } from "./tamper.ts";

const dir = path.join(repoRoot, "testvectors/entry-receipt");
const trustObj = JSON.parse(fs.readFileSync(path.join(dir, "trust.json"), "utf8"));
const trust = loadTrust(trustObj);
const vectors = fs.readdirSync(dir).filter((f) => f.startsWith("receipt-") && f.endsWith(".json"));
const read = (f: string) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")) as Record<string, unknown>;

test("the shared vectors verify (witness policy: both of two)", () => {
  assert.ok(vectors.length >= 3);
  assert.ok(trust.policy, "the vectors' trust file names a witness policy");
  for (const f of vectors) {
    const r = read(f);
    const v = verifyEntryReceipt(r, trust);
    assert.equal(v.seq, r.seq, f);
    assert.equal(receiptValid(r, trust), true, f);
  }
});

test("every flipped byte of statement, seal and checkpoint is refused", () => {
  for (const f of vectors) {
    const r = read(f);
    for (const m of ["statement", "seal", "checkpoint"] as const) {
      const n = m === "checkpoint" ? Buffer.byteLength(r.checkpoint as string) : Buffer.from(r[m] as string, "base64").length;
      for (const i of positions(n, 100)) {
        for (const bit of [0x01, 0x80]) {
          assert.equal(receiptValid(flip(r, m, i, bit), trust), false, `${f} ${m} byte ${i} bit ${bit}`);
        }
      }
    }
  }
});

test("refusals: other members, formats, a missing cosignature, another trust file", () => {
  const r = read(vectors[0]);
  assert.equal(receiptValid({ ...r, seq: (r.seq as number) + 1 }, trust), false);
  assert.equal(receiptValid({ ...r, chain: "other" }, trust), false);
  assert.equal(receiptValid({ ...r, format: "evident-entry-receipt/v2" }, trust), false);
  assert.equal(receiptValid({ ...r, extra: 1 }, trust), false);
  const { checkpoint: _c, ...noCp } = r;
  assert.equal(receiptValid(noCp, trust), false);
  assert.equal(receiptValid(null, trust), false);
  assert.equal(receiptValid("x", trust), false);
  // drop one witness's cosignature: the quorum (both) is not met
  const lines = (r.checkpoint as string).split("\n");
  const w2 = lines.findIndex((l) => l.startsWith("\u2014 witness.test/w2 "));
  assert.ok(w2 > 0);
  assert.equal(receiptValid({ ...r, checkpoint: lines.filter((_, i) => i !== w2).join("\n") }, trust), false);
  // the quorum itself: both wanted, one there; a policy of any one is met by it; a forged cosignature is invalid
  const one = lines.filter((_, i) => i !== w2).join("\n");
  assert.deepEqual(evaluatePolicy(trust.policy!, r.checkpoint as string), { satisfied: true, cosigned: ["w1", "w2"], invalid: [] });
  assert.equal(evaluatePolicy(trust.policy!, one).satisfied, false);
  const anyOne = loadTrust({ ...trustObj, witness_policy: (trustObj.witness_policy as string).replace("group both 2 w1 w2", "group both any w1 w2") });
  assert.equal(evaluatePolicy(anyOne.policy!, one).satisfied, true);
  const sp = lines[w2].lastIndexOf(" ");
  const sig = Buffer.from(lines[w2].slice(sp + 1), "base64");
  sig[40] ^= 1;
  const forged = lines.map((l, i) => (i === w2 ? l.slice(0, sp + 1) + sig.toString("base64") : l)).join("\n");
  assert.deepEqual(evaluatePolicy(trust.policy!, forged).invalid, ["w2"]);
  // a trust file without the issuer key
  const otherKey = { ...trustObj, issuer_keys: [{ kid: "5da7a1ac5c6fef4e1ed1a0f2bd2f5ecdb3b0fbe65d3fc9cdf8e5e4a3c9ea7ac1".slice(0, 64), cose_key: "x" }] };
  assert.throws(() => loadTrust(otherKey));
});

test("tlog-policy parsing follows tlogpolicy.Parse", () => {
  const w = "witness.test/w1+1269ec55+BA7KyylNIN9GTjgMf02W10foroPorqyYVRnGD/0lbuRw";
  assert.equal(parsePolicy(`witness a ${w}\nquorum a\n`).quorum, "a");
  assert.equal(parsePolicy("quorum none\n").quorum, "none");
  assert.throws(() => parsePolicy(`witness a ${w}\n`), /no quorum/);
  assert.throws(() => parsePolicy(`witness a ${w}\ngroup g 2 a\nquorum g\n`), /threshold/);
  assert.throws(() => parsePolicy(`witness a ${w}\ngroup g any a a\nquorum g\n`), /twice/);
  assert.throws(() => parsePolicy(`witness all ${w}\nquorum all\n`), /keyword/);
  assert.throws(() => parsePolicy(`witness a ${w}\nquorum a\nquorum a\n`), /second quorum/);
  assert.throws(() => parsePolicy(`group g 0 a\nquorum g\n`));
  assert.equal(parsePolicy(`# c\nwitness a ${w} https://w.example/x # c\ngroup g all a\nquorum g\n`).groups[0].threshold, 1);
});

// The receipts the live reference Coordinators returned through the adapters
// (testvectors/chap-anchored/): every one verifies under the trust file beside it, and the
// tampered ones of verify.json are refused.
for (const coordinator of ["ts", "py"]) {
  test(`chap-anchored/${coordinator}: every receipt a live reference Coordinator returned verifies; the tampered ones do not`, () => {
    const d = path.join(repoRoot, "testvectors/chap-anchored", coordinator);
    const t = loadTrust(JSON.parse(fs.readFileSync(path.join(d, "trust.json"), "utf8")));
    const lines = zlib.gunzipSync(fs.readFileSync(path.join(d, "receipts.jsonl.gz"))).toString("utf8").split("\n").filter((l) => l.trim());
    const byKey = new Map<string, Record<string, unknown>>();
    for (const l of lines) {
      const x = JSON.parse(l) as { workspace: string; seq: number; receipt: Record<string, unknown> };
      const v = verifyEntryReceipt(x.receipt, t);
      assert.equal(v.seq, x.seq);
      assert.equal(x.receipt.chain, x.workspace);
      byKey.set(`${x.workspace}/${x.seq}`, x.receipt);
    }
    assert.ok(byKey.size >= 1000, `${byKey.size} receipts`);
    const summary = JSON.parse(fs.readFileSync(path.join(d, "verify.json"), "utf8")).summary;
    assert.ok(summary.tampered.length > 0);
    for (const tc of summary.tampered) {
      const r = { ...byKey.get(`${tc.workspace}/${tc.seq}`)! };
      if (tc.member === "checkpoint") {
        const s = r.checkpoint as string;
        assert.equal(s[tc.char_index], tc.was);
        r.checkpoint = s.slice(0, tc.char_index) + tc.now + s.slice(tc.char_index + 1);
      } else {
        Object.assign(r, flip(r, tc.member, tc.byte_index, tc.xor));
      }
      assert.equal(receiptValid(r, t), false, `${coordinator} ${JSON.stringify(tc)}`);
    }
  });
}
