"""nginx as the reference server `bench calibrate` measures load generators against: a fixed body
from memory, faster than any JVM target here, so the best a generator reaches against it is (close
to) its own ceiling.

One single-process nginx per server CPU, all on one port (reuseport): each is a direct child that
dies with bench (PR_SET_PDEATHSIG), which a master's workers would not. Temp paths point into the
work folder so that nothing outside it is created, and a non-root user can run it too.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path

import psutil

from orchestrator.config.scenarios import HELLO
from orchestrator.core import httpclient
from orchestrator.core.cpus import parse_cpus
from orchestrator.errors import BenchError
from orchestrator.infra.procs import log_tail, require_tool, spawn, stop

INSTALL = "apt-get install -y nginx"
PATHS = ("/plaintext", "/json")   # what it serves: HELLO as text, and in a JSON message

_CONF = """\
daemon off;
master_process off;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path {work}/body;
    proxy_temp_path {work}/proxy;
    fastcgi_temp_path {work}/fastcgi;
    uwsgi_temp_path {work}/uwsgi;
    scgi_temp_path {work}/scgi;
    server {{
        listen 127.0.0.1:{port} reuseport;
        location = /plaintext {{ default_type text/plain; return 200 "{hello}"; }}
        location = /json {{ default_type application/json; return 200 '{{"message":"{hello}"}}'; }}
    }}
}}
"""


def executable() -> str:
    """nginx's path; MissingTool saying how to install it when it is absent."""
    return require_tool("nginx", INSTALL)


@contextmanager
def serving(port: int, cpus: str, work: Path):
    """nginx on 127.0.0.1:port, one process pinned to each of `cpus`; yields their psutil handles.
    Every one is stopped on the way out, however the block ends."""
    exe = executable()
    conf, log = work / "nginx.conf", work / "error.log"
    conf.write_text(_CONF.format(work=work, port=port, hello=HELLO))
    started = []
    try:
        for cpu in sorted(parse_cpus(cpus)):
            started.append(spawn([exe, "-p", str(work), "-c", str(conf), "-e", str(log),
                                  "-g", f"pid {work}/nginx-{cpu}.pid;"], log_path=log, cpus=str(cpu)))
        _wait_ready(port, started, work, log)
        yield [psutil.Process(p.pid) for p in started]
    finally:
        for p in started:
            stop(p, grace=5)


def _wait_ready(port: int, started, work: Path, log: Path, timeout_s: float = 10.0) -> None:
    # nginx writes its pid file after it listens, so all pid files there means all processes serve.
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in started):
            break
        if len(list(work.glob("nginx-*.pid"))) == len(started):
            r = httpclient.request(port, "GET", PATHS[0])
            if r.status == 200 and r.body == HELLO.encode():
                return
            raise BenchError(f"nginx answered {PATHS[0]} with {r.status} {r.body[:60]!r}")
        time.sleep(0.05)
    raise BenchError(f"nginx did not start on port {port}: {log_tail(log, 3) or 'no output'}")


def cpu_s(processes: list[psutil.Process]) -> float:
    """The CPU time (user + system, s) the nginx processes have used so far; BenchError when one exited."""
    total = 0.0
    for p in processes:
        try:
            t = p.cpu_times()
        except psutil.Error:
            raise BenchError(f"nginx (pid {p.pid}) exited during the calibration") from None
        total += t.user + t.system
    return total
