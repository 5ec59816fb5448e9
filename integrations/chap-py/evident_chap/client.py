"""A small HTTP client of evidentd's /v1 API (standard library only)."""
from __future__ import annotations

import http.client
import json
import socket
import urllib.parse

__all__ = ["Client", "Unreachable", "Response"]


class Unreachable(ConnectionError):
    """evidentd could not be reached (connection refused, reset, timed out)."""


class Response:
    __slots__ = ("status", "headers", "body")

    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def problem(self) -> dict:
        """The RFC 9457 problem detail of a refusal (a stand-in when the body is not one)."""
        try:
            p = self.json()
            if isinstance(p, dict):
                return p
        except (ValueError, UnicodeDecodeError):
            pass
        return {"status": self.status, "code": f"http_{self.status}", "detail": self.body[:500].decode("utf-8", "replace")}


class Client:
    """One keep-alive connection; not thread-safe (each thread makes its own)."""

    def __init__(self, url: str, token=None, timeout: float = 30.0):
        u = urllib.parse.urlsplit(url.rstrip("/"))
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"evidentd url {url!r} is not http(s)://host[:port]")
        self.scheme, self.netloc, self.base = u.scheme, u.netloc, u.path
        self.token, self.timeout = token, timeout
        self._conn = None

    def _connect(self, timeout):
        cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        return cls(self.netloc, timeout=timeout)

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def request(self, method: str, path: str, body: bytes = None, content_type: str = None,
                timeout: float = None) -> Response:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type or "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        t = self.timeout if timeout is None else timeout
        for attempt in (0, 1):
            fresh = self._conn is None
            if fresh:
                self._conn = self._connect(t)
            else:
                self._conn.timeout = t
                if self._conn.sock is not None:
                    self._conn.sock.settimeout(t)
            try:
                self._conn.request(method, self.base + path, body=body, headers=headers)
                r = self._conn.getresponse()
                data = r.read()
                if r.getheader("Connection", "").lower() == "close":
                    self.close()
                return Response(r.status, r.headers, data)
            except (OSError, http.client.HTTPException) as e:
                self.close()
                # A kept-alive connection the server closed meanwhile: one fresh retry.
                if fresh or attempt == 1 or isinstance(e, socket.timeout):
                    raise Unreachable(f"{method} {path}: {e.__class__.__name__}: {e}") from e
        raise Unreachable(f"{method} {path}")  # not reached


def q(s: str) -> str:
    return urllib.parse.quote(s, safe="")
