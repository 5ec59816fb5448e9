// Offline verification of one entry receipt (testvectors/entry-receipt/receipt-seq3.json, two
// witnesses): 200 verifications, three rounds. Run: npm run bench:verify
import * as fs from "node:fs";
import * as path from "node:path";
import { loadTrust, verifyEntryReceipt } from "../src/index.ts";

const dir = path.resolve(import.meta.dirname, "../../../testvectors/entry-receipt");
const trust = loadTrust(JSON.parse(fs.readFileSync(path.join(dir, "trust.json"), "utf8")));
const receipt = JSON.parse(fs.readFileSync(path.join(dir, "receipt-seq3.json"), "utf8"));
const n = 200;
for (let round = 0; round < 3; round++) {
  const start = performance.now();
  for (let i = 0; i < n; i++) verifyEntryReceipt(receipt, trust);
  console.log(`verifyEntryReceipt: ${((performance.now() - start) / n).toFixed(2)} ms/op`);
}
