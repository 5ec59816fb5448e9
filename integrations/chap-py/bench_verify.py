"""Offline verification of one entry receipt (testvectors/entry-receipt/receipt-seq3.json, two
witnesses): 200 verifications, three rounds. Run: /usr/bin/python3 integrations/chap-py/bench_verify.py"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from evident_chap.verify import load_trust, verify_entry_receipt  # noqa: E402

VECTORS = os.path.join(HERE, "..", "..", "testvectors", "entry-receipt")
trust = load_trust(os.path.join(VECTORS, "trust.json"))
with open(os.path.join(VECTORS, "receipt-seq3.json"), encoding="utf-8") as f:
    receipt = json.load(f)
N = 200
for _ in range(3):
    start = time.perf_counter()
    for _ in range(N):
        verify_entry_receipt(receipt, trust)
    print(f"verify_entry_receipt: {(time.perf_counter() - start) / N * 1000:.2f} ms/op")
