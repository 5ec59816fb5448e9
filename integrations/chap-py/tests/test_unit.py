"""Unit tests: JCS, the strict CBOR reader, signed notes and tlog-policy, and entry-receipt
verification on the shared vectors (testvectors/entry-receipt/)."""
from __future__ import annotations

import base64
import copy
import gzip
import hashlib
import json
import struct
import unittest

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from tests.harness import REPO
from evident_chap import cbor, note
from evident_chap.jcs import canonicalize, format_number
from evident_chap.verify import (ReceiptError, _root_from_inclusion, load_trust, parse_sign1,
                                 verify_entry_receipt)

VEC = REPO / "testvectors" / "entry-receipt"
ANCHORED = REPO / "testvectors" / "chap-anchored"


class TestJCS(unittest.TestCase):
    def test_numbers(self):
        for x, want in [(0, "0"), (-0.0, "0"), (1.0, "1"), (1e21, "1e+21"), (1e20, "100000000000000000000"),
                        (123.456, "123.456"), (1.5e-7, "1.5e-7"), (0.000001, "0.000001"), (5e-324, "5e-324"),
                        (1.7976931348623157e308, "1.7976931348623157e+308"), (-12.5, "-12.5"),
                        (2 ** 53 - 1, "9007199254740991"), (0.1 + 0.2, "0.30000000000000004")]:
            self.assertEqual(format_number(x), want, x)
        with self.assertRaises(ValueError):
            format_number(float("nan"))

    def test_objects(self):
        v = {"b": [1, None, True, False, [], {}], "a": "é\n\u2028\"\\\x01", "\U0001F600": 1, "\uE000": 2}
        self.assertEqual(canonicalize(v), '{"a":"é\\n\u2028\\"\\\\\\u0001","b":[1,null,true,false,[],{}],'
                                          '"\U0001F600":1,"\uE000":2}'.encode())

    def test_deep(self):
        v = 1
        for _ in range(50000):
            v = {"k": [v]}
        self.assertEqual(len(canonicalize(v)), 50000 * 8 + 1)


class TestCBOR(unittest.TestCase):
    def test_strict(self):
        self.assertEqual(cbor.decode(bytes.fromhex("a201020304")), {1: 2, 3: 4})
        for bad in ("a201020102", "9f01ff", "0102", "5f41004100ff", "f97e00"):
            with self.assertRaises(cbor.CBORError, msg=bad):
                cbor.decode(bytes.fromhex(bad))


def _vkey(name, pub, alg):
    key = bytes([alg]) + pub
    h = hashlib.sha256(name.encode() + b"\n" + key).digest()[:4]
    return f"{name}+{h.hex()}+{base64.b64encode(key).decode()}", h


def _pub(sk):
    return sk.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


class TestNotes(unittest.TestCase):
    def setUp(self):
        self.log = Ed25519PrivateKey.generate()
        self.w = [Ed25519PrivateKey.generate() for _ in range(3)]
        self.body = b"example.org/log\n5\n" + base64.b64encode(b"\x07" * 32) + b"\n"
        self.vk, h = _vkey("example.org/log", _pub(self.log), 1)
        self.lines = ["\u2014 example.org/log " + base64.b64encode(h + self.log.sign(self.body)).decode()]
        self.wvk = []
        for i, sk in enumerate(self.w):
            vk, wh = _vkey(f"w{i}.test", _pub(sk), 4)
            self.wvk.append(vk)
            t = 1700000000 + i
            sig = sk.sign(b"cosignature/v1\ntime %d\n" % t + self.body)
            self.lines.append(f"\u2014 w{i}.test " + base64.b64encode(wh + struct.pack(">Q", t) + sig).decode())

    def note(self, lines):
        return self.body + b"\n" + "".join(l + "\n" for l in lines).encode()

    def policy(self, quorum_lines):
        return note.parse_policy("".join(f"witness w{i} {vk}\n" for i, vk in enumerate(self.wvk)) + quorum_lines)

    def test_log_signature(self):
        v = note.log_verifier(self.vk)
        body, _ = note.open_note(self.note(self.lines), [v])
        self.assertEqual(body, self.body)
        bad = self.lines[0][:-6] + ("A" if self.lines[0][-6] != "A" else "B") + self.lines[0][-5:]
        with self.assertRaises(note.NoteError):
            note.open_note(self.note([bad] + self.lines[1:]), [v])
        with self.assertRaises(note.NoteError):
            note.open_note(self.note(self.lines[1:]), [v])

    def test_quorum(self):
        cp = self.note(self.lines)
        self.assertTrue(self.policy("group g 2 w0 w1 w2\nquorum g\n").evaluate(cp)[0])
        only0 = self.note(self.lines[:2])
        self.assertFalse(self.policy("group g 2 w0 w1 w2\nquorum g\n").evaluate(only0)[0])
        self.assertTrue(self.policy("group g any w0 w1 w2\nquorum g\n").evaluate(only0)[0])
        self.assertTrue(self.policy("group a all w0\ngroup b any w1 w2\ngroup g all a b\nquorum g\n").evaluate(cp)[0])
        self.assertFalse(self.policy("quorum w2\n").evaluate(only0)[0])
        self.assertTrue(self.policy("quorum none\n").evaluate(only0)[0])
        # a forged cosignature is invalid, not just missing
        forged = list(self.lines)
        raw = bytearray(base64.b64decode(forged[2].split(" ")[2]))
        raw[-1] ^= 1
        forged[2] = forged[2].rsplit(" ", 1)[0] + " " + base64.b64encode(bytes(raw)).decode()
        ok, cosigned, invalid = self.policy("group g any w0 w1 w2\nquorum g\n").evaluate(self.note(forged))
        self.assertTrue(ok)
        self.assertEqual(invalid, ["w1"])

    def test_policy_errors(self):
        for bad in ("", "quorum x\n", "witness w0 nokey\nquorum w0\n", f"witness any {self.wvk[0]}\nquorum any\n",
                    f"witness a {self.wvk[0]}\ngroup g 2 a\nquorum g\n", f"witness a {self.wvk[0]}\ngroup g 1 a a\nquorum g\n",
                    f"witness a {self.wvk[0]}\nquorum a\nquorum a\n", "quorum none\nfoo bar\n",
                    f"witness a {self.wvk[0]}\ngroup g 0 a\nquorum g\n"):
            with self.assertRaises(note.NoteError, msg=bad):
                note.parse_policy(bad)
        note.parse_policy(f"log {self.vk} https://log.example\nwitness a {self.wvk[0]} https://w.example/x # c\nquorum a\n")


class TestMerkle(unittest.TestCase):
    def test_inclusion(self):
        def mth(leaves):
            if len(leaves) == 1:
                return leaves[0]
            k = 1
            while k * 2 < len(leaves):
                k *= 2
            return hashlib.sha256(b"\x01" + mth(leaves[:k]) + mth(leaves[k:])).digest()

        def path(i, leaves):
            if len(leaves) == 1:
                return []
            k = 1
            while k * 2 < len(leaves):
                k *= 2
            if i < k:
                return path(i, leaves[:k]) + [mth(leaves[k:])]
            return path(i - k, leaves[k:]) + [mth(leaves[:k])]

        for n in range(1, 40):
            leaves = [hashlib.sha256(b"\x00" + bytes([i])).digest() for i in range(n)]
            root = mth(leaves)
            for i in range(n):
                self.assertEqual(_root_from_inclusion(i, n, leaves[i], path(i, leaves)), root)


class TestVectors(unittest.TestCase):
    """The shared receipts of testvectors/entry-receipt/: two witnesses, quorum both."""

    def setUp(self):
        self.trust = load_trust(str(VEC / "trust.json"))
        self.receipts = {p.name: json.loads(p.read_text()) for p in sorted(VEC.glob("receipt-*.json"))}
        self.assertEqual(len(self.receipts), 3)

    def test_valid(self):
        for name, r in self.receipts.items():
            v = verify_entry_receipt(r, self.trust)
            self.assertEqual(v["seq"], r["seq"], name)

    def test_every_flip_refused(self):
        for name, r in self.receipts.items():
            for member in ("statement", "seal"):
                raw = base64.b64decode(r[member])
                step = max(1, len(raw) // 97)
                for pos in list(range(0, len(raw), step)) + [len(raw) - 1]:
                    b = bytearray(raw)
                    b[pos] ^= 0x01
                    bad = dict(r, **{member: base64.b64encode(bytes(b)).decode()})
                    with self.assertRaises(ReceiptError, msg=(name, member, pos)):
                        verify_entry_receipt(bad, self.trust)
            cp = r["checkpoint"].encode()
            for pos in range(len(cp)):
                b = bytearray(cp)
                b[pos] ^= 0x01
                try:
                    s = b.decode("utf-8")
                except UnicodeDecodeError:
                    continue
                with self.assertRaises(ReceiptError, msg=(name, "checkpoint", pos)):
                    verify_entry_receipt(dict(r, checkpoint=s), self.trust)

    def test_members(self):
        r = self.receipts["receipt-seq3.json"]
        for bad in (dict(r, seq=4), dict(r, chain="other"), dict(r, format="evident-entry-receipt/v2"),
                    dict(r, extra=1), {k: v for k, v in r.items() if k != "seal"}, dict(r, seal=r["statement"])):
            with self.assertRaises(ReceiptError):
                verify_entry_receipt(bad, self.trust)
        with self.assertRaisesRegex(ReceiptError, "newer Evident"):
            verify_entry_receipt(dict(r, format="evident-entry-receipt/v2"), self.trust)

    def test_witness_quorum(self):
        r = self.receipts["receipt-seq12.json"]
        raw = json.loads((VEC / "trust.json").read_text())
        # a policy that also wants a third witness, who never cosigned: quorum not met
        vk3, _ = _vkey("witness.test/w3", _pub(Ed25519PrivateKey.generate()), 4)
        lines = [l for l in raw["witness_policy"].split("\n") if l.startswith("witness ")]
        stricter = dict(raw, witness_policy="\n".join(lines) + f"\nwitness w3 {vk3}\ngroup all3 all w1 w2 w3\nquorum all3\n")
        with self.assertRaisesRegex(ReceiptError, "quorum"):
            verify_entry_receipt(r, load_trust(stricter))
        one = dict(raw, witness_policy="\n".join(lines) + f"\nwitness w3 {vk3}\ngroup two 2 w1 w3\nquorum two\n")
        with self.assertRaisesRegex(ReceiptError, "quorum"):
            verify_entry_receipt(r, load_trust(one))
        anyof = dict(raw, witness_policy="\n".join(lines) + f"\nwitness w3 {vk3}\ngroup g any w3 w2\nquorum g\n")
        self.assertTrue(verify_entry_receipt(r, load_trust(anyof)))
        raw.pop("witness_policy")
        self.assertTrue(verify_entry_receipt(r, load_trust(raw)))

    def test_other_trust(self):
        raw = json.loads((VEC / "trust.json").read_text())
        other = copy.deepcopy(raw)
        other["issuer_keys"] = other["issuer_keys"][:0] or None
        with self.assertRaises(Exception):
            load_trust(other)
        # a trust file of another log (fresh log key): the checkpoint does not verify
        sk = Ed25519PrivateKey.generate()
        other = copy.deepcopy(raw)
        other["log_keys"] = [_vkey(raw["origin"], _pub(sk), 1)[0]]
        with self.assertRaises(ReceiptError):
            verify_entry_receipt(self.receipts["receipt-seq3.json"], load_trust(other))

    def test_every_bit_counts(self):
        """Every bit of the statement and the seal and every byte of the checkpoint (^ 0x01) of
        receipt-seq3.json, 19,961 changes: each one refused."""
        r = self.receipts["receipt-seq3.json"]
        verify_entry_receipt(r, self.trust)
        n = 0
        for member in ("statement", "seal"):
            raw = base64.b64decode(r[member])
            for pos in range(len(raw)):
                for bit in range(8):
                    b = bytearray(raw)
                    b[pos] ^= 1 << bit
                    bad = dict(r, **{member: base64.b64encode(bytes(b)).decode()})
                    with self.assertRaises(ReceiptError, msg=(member, pos, bit)):
                        verify_entry_receipt(bad, self.trust)
                    n += 1
        cp = r["checkpoint"].encode()
        for pos in range(len(cp)):
            b = bytearray(cp)
            b[pos] ^= 0x01
            # invalid UTF-8 (inside the em dash of a cosignature line) as the lone surrogates a
            # JSON reader gives for "\udcXX"
            with self.assertRaises(ReceiptError, msg=("checkpoint", pos)):
                verify_entry_receipt(dict(r, checkpoint=b.decode("utf-8", "surrogateescape")), self.trust)
            n += 1
        self.assertEqual(n, 8 * (len(base64.b64decode(r["statement"])) + len(base64.b64decode(r["seal"]))) + len(cp))
        self.assertGreater(n, 5321)  # Go's TestEveryByteCounts: 0x01 and 0x80 of each byte

    def test_checkpoint_copy_must_match(self):
        """The log receipt's -70010 (unprotected, so unsigned) must be the receipt's checkpoint."""
        r = self.receipts["receipt-seq3.json"]
        raw = base64.b64decode(r["seal"])
        seal = parse_sign1(raw, "seal")
        lr = parse_sign1(seal.unprotected[394][0], "log receipt")
        copy_ = lr.unprotected[-70010]
        self.assertEqual(copy_, r["checkpoint"].encode())
        other = bytearray(copy_)
        other[len(other) // 2] ^= 0x01
        lr_raw = lr.raw.replace(copy_, bytes(other))
        self.assertNotEqual(lr_raw, lr.raw)
        seal_raw = raw.replace(lr.raw, lr_raw)
        self.assertEqual(len(seal_raw), len(raw))
        bad = dict(r, seal=base64.b64encode(seal_raw).decode())
        with self.assertRaisesRegex(ReceiptError, "-70010"):
            verify_entry_receipt(bad, self.trust)
        # the copy the receipt carries must be the checkpoint itself, not any other value
        for v in (None, r["checkpoint"], r["checkpoint"].encode() + b"\n", b""):
            with self.assertRaisesRegex(ReceiptError, "-70010", msg=repr(v)[:40]):
                verify_entry_receipt(dict(r, seal=base64.b64encode(_with_copy(raw, v)).decode()), self.trust)
        verify_entry_receipt(dict(r, seal=base64.b64encode(_with_copy(raw, r["checkpoint"].encode())).decode()), self.trust)


def _with_copy(seal_raw, value):
    """The seal with its log receipt's -70010 set to value (re-encoded; all else as it was)."""
    import cbor2
    seal = cbor2.loads(seal_raw)
    prot, unprot, payload, sig = seal.value
    lr = cbor2.loads(unprot[394][0])
    lprot, lunprot, lpayload, lsig = lr.value
    lunprot = dict(lunprot)
    lunprot[-70010] = value
    lr_raw = cbor2.dumps(cbor2.CBORTag(18, [lprot, lunprot, lpayload, lsig]))
    return cbor2.dumps(cbor2.CBORTag(18, [prot, {394: [lr_raw]}, payload, sig]))


class TestAnchored(unittest.TestCase):
    """The receipts the live reference Coordinators returned (testvectors/chap-anchored/): every
    one verifies under its trust file, and the tampered ones of verify.json are refused."""

    def check(self, coordinator):
        d = ANCHORED / coordinator
        trust = load_trust(str(d / "trust.json"))
        receipts = {}
        with gzip.open(d / "receipts.jsonl.gz", "rt", encoding="utf-8") as f:
            for line in f:
                x = json.loads(line)
                v = verify_entry_receipt(x["receipt"], trust)
                self.assertEqual((v["chain"], v["seq"]), (x["workspace"], x["seq"]))
                receipts[(x["workspace"], x["seq"])] = x["receipt"]
        summary = json.loads((d / "verify.json").read_text())["summary"]
        self.assertEqual(len(receipts), summary["receipts"])
        self.assertTrue(summary["tampered"])
        for t in summary["tampered"]:
            r = dict(receipts[(t["workspace"], t["seq"])])
            m = t["member"]
            if m == "checkpoint":
                i = t["char_index"]
                self.assertEqual(r[m][i], t["was"])
                r[m] = r[m][:i] + t["now"] + r[m][i + 1:]
            else:
                b = bytearray(base64.b64decode(r[m]))
                b[t["byte_index"]] ^= t["xor"]
                r[m] = base64.b64encode(bytes(b)).decode()
            with self.assertRaises(ReceiptError, msg=(coordinator, t)):
                verify_entry_receipt(r, trust)
        return len(receipts)

    def test_ts(self):
        self.assertEqual(self.check("ts"), 1534)

    def test_py(self):
        self.assertEqual(self.check("py"), 1534)


if __name__ == "__main__":
    unittest.main()
