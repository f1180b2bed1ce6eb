"""A tiny HTTP/1.1 client on the standard library that keeps the framing headers verification needs."""
from __future__ import annotations

import http.client
from dataclasses import dataclass


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    @property
    def media_type(self) -> str:
        return (self.header("content-type") or "").split(";")[0].strip().lower()


def request(port: int, method: str, path: str, body: bytes | None = None,
            headers: dict[str, str] | None = None, timeout: float = 10.0, host: str = "127.0.0.1") -> Response:
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        data = r.read()
        return Response(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
    finally:
        conn.close()
