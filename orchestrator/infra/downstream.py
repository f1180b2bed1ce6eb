"""The downstream service of frameworks/CONTRACT.md: nginx with its echo module, answering
`GET /call?i=K` with `{"call":K}` after the run's delay, the other service a fan-out request calls.

A well-kept server rather than a home-made one: nginx's event loop answers tens of thousands of
delayed calls a second on one CPU (its ceiling is `bench calibrate`'s to measure), and its timers
wake within a millisecond. One process, started with Redis and MariaDB on the infrastructure's CPUs
and dying with bench (as `nobody` when bench is root, its parent-death signal set again after the
change of user, as mariadbd's is). Its stub_status page gives the evidence of each cell: calls
counted, and calls in progress and connections open at each poll.
"""
from __future__ import annotations

import os
import pwd
import time
from pathlib import Path

from orchestrator.core import httpclient
from orchestrator.core.downstream_api import STATUS_PATH
from orchestrator.errors import BenchError
from orchestrator.infra.procs import as_user, log_tail, require_tool, spawn

INSTALL = "apt-get install -y nginx libnginx-mod-http-echo"
ECHO_MODULE = Path("/usr/lib/nginx/modules/ngx_http_echo_module.so")
FOLDER = "downstream"   # in the infrastructure's data directory, owned by the server's user
# Below the machine's hard limit on open files (20,000 here), which a non-root nginx cannot raise.
CONNECTIONS = 16_000

_CONF = """\
load_module {module};
daemon off;
master_process off;
worker_rlimit_nofile {files};
pid {work}/nginx.pid;
events {{ worker_connections {connections}; }}
http {{
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 300s;
    client_body_temp_path {work}/body;
    proxy_temp_path {work}/proxy;
    fastcgi_temp_path {work}/fastcgi;
    uwsgi_temp_path {work}/uwsgi;
    scgi_temp_path {work}/scgi;
    # echo_sleep takes seconds: ms=M (ASCII digits) as a decimal, else the run's delay
    map $arg_ms $call_delay {{
        default "{delay}";
        "~^([0-9])$" "0.00$1";
        "~^([0-9][0-9])$" "0.0$1";
        "~^([0-9][0-9][0-9])$" "0.$1";
        "~^([0-9]{{1,2}})([0-9][0-9][0-9])$" "$1.$2";
    }}
    server {{
{listens}
        location = /call {{
            if ($arg_i !~ "^[0-9]{{1,9}}$") {{ return 404; }}
            default_type application/json;
            echo_sleep $call_delay;
            echo -n '{{"call":$arg_i}}';
        }}
        location = {status} {{ stub_status; }}
        location / {{ return 404; }}
    }}
}}
"""


def seconds(ms: int) -> str:
    """The delay as echo_sleep reads it: 20 -> "0.020"."""
    return f"{ms // 1000}.{ms % 1000:03d}"


def config(work: Path, port: int, binds: list[str], delay_ms: int) -> str:
    listens = "\n".join(f"        listen {address}:{port};" for address in binds)
    return _CONF.format(module=ECHO_MODULE, files=CONNECTIONS + 1000, work=work, connections=CONNECTIONS,
                        delay=seconds(delay_ms), listens=listens, status=STATUS_PATH)


def executable() -> str:
    """nginx's path, with the echo module beside it; MissingTool saying how to install them."""
    exe = require_tool("nginx", INSTALL)
    if not ECHO_MODULE.exists():
        raise BenchError(f"the downstream service needs nginx's echo module ({ECHO_MODULE}): {INSTALL}")
    return exe


def _account() -> tuple[int, int] | None:
    """nobody's uid and gid when bench is root (the server need not be), else None: bench's own."""
    if os.geteuid() != 0:
        return None
    entry = pwd.getpwnam("nobody")
    return entry.pw_uid, entry.pw_gid


def start(data_dir: Path, port: int, binds: list[str], delay_ms: int, cpus: str | None, netns: str | None,
          outlive: bool, status_host: str) -> int:
    """Start the downstream in data_dir/downstream and wait until it answers; returns its pid. As
    root, data_dir must be reachable by `nobody` (a folder of its own in /tmp, as the infrastructure's)."""
    exe = executable()
    work, account = data_dir / FOLDER, _account()
    work.mkdir(mode=0o700)
    conf = work / "nginx.conf"
    conf.write_text(config(work, port, binds, delay_ms))
    if account is not None:
        for path in (work, conf):
            os.chown(path, *account)
        if data_dir.stat().st_uid != account[0]:
            data_dir.chmod(0o711)   # traversable to reach its own folder, not listable
    log = data_dir / "downstream.log"
    argv = [exe, "-p", str(work), "-c", str(conf), "-e", str(work / "error.log")]
    proc = spawn(argv if account is None else as_user(argv, *account, outlive),
                 log_path=log, cpus=cpus, outlive_parent=outlive, netns=netns)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            httpclient.request(port, "GET", STATUS_PATH, host=status_host, timeout=1)
            return proc.pid
        except OSError:
            time.sleep(0.05)
    proc.kill()
    errors = log_tail(work / "error.log", 3) if (work / "error.log").exists() else ""
    raise BenchError(f"the downstream (nginx) did not start on port {port}: {errors or log_tail(log, 3) or 'no output'}")
