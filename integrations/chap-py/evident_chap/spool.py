"""The adapter's spool: per-workspace JSON Lines of entries not yet acknowledged by
evidentd, and a persisted index SHA-256(JCS(record)) -> seq."""
from __future__ import annotations

import json
import os
import urllib.parse

__all__ = ["Spool"]


def _name(ws: str) -> str:
    return "ws-" + urllib.parse.quote(ws, safe="")


def _line(seq: int, head, entry_json: bytes) -> bytes:
    return b"%d %s %s\n" % (seq, (head or "-").encode("ascii"), entry_json)


class Spool:
    """Files under dir: ws-<id>.jsonl (one "<seq> <head or -> <entry JCS>" a line, the last line
    of a seq wins; with a wrapped store also "R <n>" lines: the entries below n are in the
    Coordinator's store), ws-<id>.index ("<sha256 hex> <seq>" a line, the last line of a seq
    wins) and refused.jsonl. Not thread-safe: the worker owns it."""

    def __init__(self, directory: str):
        self.dir = directory
        os.makedirs(directory, exist_ok=True)
        self._files = {}  # ws -> (entries file, index file)
        self._dirty = set()

    def workspaces(self):
        out = []
        for fn in sorted(os.listdir(self.dir)):
            if fn.startswith("ws-") and (fn.endswith(".jsonl") or fn.endswith(".index")):
                ws = urllib.parse.unquote(fn[3:].rsplit(".", 1)[0])
                if ws not in out:
                    out.append(ws)
        return out

    def load(self, ws: str):
        """Returns ({seq: (entry json bytes, head)}, [(hash hex, seq)], lines in the entries file,
        the highest "R" mark or None when the file has none)."""
        pending, index, lines, released = {}, [], 0, None
        base = os.path.join(self.dir, _name(ws))
        try:
            with open(base + ".jsonl", "rb") as f:
                for line in f:
                    if not line.endswith(b"\n"):
                        break  # torn by a crash before its fsync
                    # The entry is not parsed: it may nest deeper than json's recursion limit.
                    parts = line[:-1].split(b" ", 2)
                    if len(parts) == 2 and parts[0] == b"R" and parts[1].isdigit():
                        released = max(released or 0, int(parts[1]))
                        continue
                    if len(parts) != 3 or not parts[0].isdigit():
                        continue
                    head = None if parts[1] == b"-" else parts[1].decode("ascii")
                    pending[int(parts[0])] = (parts[2], head)
                    lines += 1
        except FileNotFoundError:
            pass
        try:
            with open(base + ".index", "rb") as f:
                for line in f:
                    if not line.endswith(b"\n"):
                        break
                    parts = line.split()
                    if len(parts) == 2 and len(parts[0]) == 64:
                        try:
                            index.append((parts[0].decode("ascii"), int(parts[1])))
                        except ValueError:
                            continue
        except FileNotFoundError:
            pass
        return pending, index, lines, released

    def _open(self, ws: str):
        fs = self._files.get(ws)
        if fs is None:
            base = os.path.join(self.dir, _name(ws))
            fs = (open(base + ".jsonl", "ab"), open(base + ".index", "ab"))
            self._files[ws] = fs
        return fs

    def append(self, ws: str, seq: int, entry_json: bytes, head, digest_hex):
        ef, xf = self._open(ws)
        ef.write(_line(seq, head, entry_json))
        if digest_hex is not None:
            xf.write(b"%s %d\n" % (digest_hex.encode("ascii"), seq))
        self._dirty.add(ws)

    def release(self, ws: str, n: int):
        """Marks the entries below n as in the Coordinator's store."""
        ef, _ = self._open(ws)
        ef.write(b"R %d\n" % n)
        self._dirty.add(ws)

    def sync(self):
        """Flushes and fsyncs every file written since the last sync: once per batch."""
        for ws in self._dirty:
            for f in self._files[ws]:
                f.flush()
                os.fsync(f.fileno())
        self._dirty.clear()

    def rewrite(self, ws: str, pending: dict, released=None):
        """Compacts: keeps only the entries evidentd has not acknowledged (atomically), after
        the "R" mark released when it is not None."""
        ef, xf = self._open(ws)
        ef.close()
        base = os.path.join(self.dir, _name(ws))
        tmp = base + ".jsonl.tmp"
        with open(tmp, "wb") as f:
            if released is not None:
                f.write(b"R %d\n" % released)
            for seq in sorted(pending):
                ej, head = pending[seq]
                f.write(_line(seq, head, ej))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, base + ".jsonl")
        self._fsync_dir()
        self._files[ws] = (open(base + ".jsonl", "ab"), xf)

    def refused(self, record: dict):
        with open(os.path.join(self.dir, "refused.jsonl"), "ab") as f:
            f.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")
            f.flush()
            os.fsync(f.fileno())

    def _fsync_dir(self):
        try:
            fd = os.open(self.dir, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)

    def close(self):
        try:
            self.sync()
        finally:
            for fs in self._files.values():
                for f in fs:
                    f.close()
            self._files.clear()
