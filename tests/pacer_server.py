"""Small HTTP servers of known behaviour in the test process, and pacer run against them: the
drivers' tests of how pacer reads each way HTTP/1.1 ends a response, and the slow tier's of its
schedule and its queue (the `serve` fixture, in conftest.py, starts them and closes them after)."""
from __future__ import annotations

import socket
import threading
import time

from orchestrator.config.driver_registry import get
from orchestrator.config.load import LoadSpec
from orchestrator.config.scenarios import Scenario
from orchestrator.drivers.pacer import read_records


class Server:
    """A thread per connection; `answer(n)` gives the n-th response's bytes (n counts every request
    on every connection from 1), after `delay(n)` seconds; None closes the connection unanswered."""

    def __init__(self, answer, delay=lambda n: 0.0):
        self.answer, self.delay, self.count, self.requests, self.connections = answer, delay, 0, [], 0
        self.lock = threading.Lock()
        self.sock = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.port = self.sock.getsockname()[1]
        self.sock.settimeout(0.2)
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopped:
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            with self.lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        buf = b""
        with conn:
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                head, _, buf = buf.partition(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                while len(buf) < length:
                    buf += conn.recv(65536)
                body, buf = buf[:length], buf[length:]
                with self.lock:
                    self.count += 1
                    n = self.count
                    self.requests.append(head + b"\r\n\r\n" + body)
                time.sleep(self.delay(n))
                out = self.answer(n)
                if out is None:
                    return
                conn.sendall(out)
                if b"Connection: close" in out or b"HTTP/1.0" in out:
                    return

    def close(self):
        self.stopped = True
        self.sock.close()



def pace(tmp_path, port, rate=200, duration_s=1.0, concurrency=16, scenario=None, timeout_s=5.0, then=()):
    scenario = scenario or Scenario("t", "GET", "/t", 200, "text/plain")
    spec = LoadSpec(port=port, scenario=scenario, concurrency=concurrency, duration_s=duration_s, cpus="0",
                    timeout_s=timeout_s, out_dir=tmp_path, rate=rate, then=then)
    return get("pacer").run(spec), read_records(tmp_path / f"pacer-{spec.stem}.records.parquet")



def length(body=b"hello", status="200 OK", extra=""):
    return f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body
