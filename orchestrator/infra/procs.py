"""Starting and stopping child processes so that none outlives the run.

Children start in their own session (Ctrl-C in the terminal reaches only the orchestrator, which
then stops them in order) and, unless they must outlive the command (`bench infra up`), with
PR_SET_PDEATHSIG so the kernel kills them if the orchestrator itself is killed.
"""
from __future__ import annotations

import ctypes
import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from orchestrator import REPO_ROOT
from orchestrator.errors import MissingTool, UsageError
from orchestrator.infra import log_cap

OWNER_VAR = "BENCH_OWNER"
INFRA_UP = "infra-up"   # an Owner's pid for servers `bench infra up` leaves to outlive it
_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def start_ticks(pid: int) -> str | None:
    """When pid started, in clock ticks since boot (/proc/PID/stat's 22nd field): with the boot id, what
    tells a process from a later one that got its pid. None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[19]   # the name, in parentheses, may hold spaces


def boot_id() -> str:
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip()


@dataclass(frozen=True)
class Owner:
    """The bench process that started a server, container or folder, marked on it (BENCH_OWNER in a
    process's environment, the owner file of a data directory, a container's labels): which host, which
    boot, which process (its pid and start time: a pid alone is reused) and which checkout. `bench
    clean` removes only what belongs to its own checkout and whose owner is gone."""
    pid: str      # or INFRA_UP
    start: str    # start_ticks of pid ("" for INFRA_UP)
    boot: str
    host: str
    home: str     # the checkout (REPO_ROOT)

    @classmethod
    def me(cls, outlive: bool = False) -> Owner:
        return cls(INFRA_UP if outlive else str(os.getpid()), "" if outlive else start_ticks(os.getpid()) or "",
                   boot_id(), socket.gethostname(), str(REPO_ROOT))

    def mark(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def parse(cls, fields: str | dict | None) -> Owner | None:
        """An Owner from its mark or its fields; None for anything else (a mark of an older bench, which
        named no checkout: not this checkout's to judge)."""
        try:
            d = json.loads(fields) if isinstance(fields, str) else fields
            return cls(**{k: str(d[k]) for k in cls.__dataclass_fields__})
        except (ValueError, TypeError, KeyError):
            return None

    def gone(self) -> bool:
        """Whether the owner process has ended (another boot, its pid gone or now another process's)."""
        if self.boot != boot_id():
            return True
        return start_ticks(int(self.pid)) != self.start if self.pid.isdigit() else False


def _die_with_parent() -> None:
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def pinned(argv: list[str], cpus: str | None) -> list[str]:
    """Prefix argv with taskset so the process and its threads stay on `cpus` (e.g. "1" or "0-1")."""
    if not cpus:
        return list(argv)
    return [require_tool("taskset", "apt-get install util-linux"), "-c", cpus, *argv]


def in_netns(argv: list[str], netns: str | None) -> list[str]:
    """Prefix argv so that it runs in a network namespace of network.py (None: this machine's own).
    nsenter switches the network only: the process keeps this machine's files, /tmp (Flight
    Recorder's attach socket) and /sys (cgroups), and its PID, as `ip netns exec` would not all."""
    if not netns:
        return list(argv)
    return [require_tool("nsenter", "apt-get install util-linux"), f"--net=/run/netns/{netns}", *argv]


def as_user(argv: list[str], user: str | int, group: str | int, outlive: bool) -> list[str]:
    """argv run as another user (a name or an id) from root, by setpriv, which sets the parent-death
    signal again after the change of user: the kernel clears it then, so a server dropping root itself
    would outlive a killed bench."""
    death = [] if outlive else ["--pdeathsig=SIGKILL"]
    return [require_tool("setpriv", "apt-get install util-linux"), f"--reuid={user}", f"--regid={group}",
            "--init-groups" if isinstance(user, str) else "--clear-groups", *death, "--", *argv]


def spawn(argv: list[str], *, log_path: Path | None = None, cwd: Path | None = None,
          env: dict[str, str] | None = None, cpus: str | None = None,
          outlive_parent: bool = False, netns: str | None = None) -> subprocess.Popen:
    """Start argv (never through a shell), output to log_path, pinned to cpus, in netns if given.

    The child's environment names its owner (BENCH_OWNER), so `bench clean` can tell a leftover of a
    crashed orchestrator from a process a live run still uses. Its log is kept under a size (log_cap.py).
    """
    env = {**(os.environ if env is None else env), OWNER_VAR: Owner.me(outlive_parent).mark()}
    out = open(log_path, "ab") if log_path else subprocess.DEVNULL
    try:
        popen = subprocess.Popen(
            in_netns(pinned(argv, cpus), netns), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=None if outlive_parent else _die_with_parent)
        if log_path:
            log_cap.watch(popen, log_path)
        return popen
    finally:
        if log_path:
            out.close()


def stop_pid(pid: int, grace: float = 10.0) -> None:
    """SIGTERM the process and its descendants, then SIGKILL whatever is left after `grace` seconds."""
    stop_pids([pid], grace)


def stop_pids(pids, grace: float = 10.0) -> None:
    """stop_pid for several processes at once: each is signalled before any is waited for (Redis,
    MariaDB and the downstream took 1.3, 2.0 and 2.0 s one after the other, waited for by polling
    when they are not this process's children, as `bench infra down` finds them)."""
    family = []
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            family += [proc, *proc.children(recursive=True)]
        except psutil.NoSuchProcess:
            pass
    for p in family:
        try:
            p.send_signal(signal.SIGCONT)  # a frozen (SIGSTOPped) process cannot act on SIGTERM
            p.send_signal(signal.SIGTERM)
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(family, timeout=grace)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=5)


def stop(popen: subprocess.Popen, grace: float = 10.0) -> None:
    if popen.poll() is None:
        stop_pid(popen.pid, grace)
    try:
        popen.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def require_tool(name: str, how: str, extra_dirs: tuple[str, ...] = ("/usr/sbin", "/sbin")) -> str:
    """Path of an executable, or MissingTool saying how to install it.

    The environment bench runs in comes first: Locust and k6 live in .venv/bin, which is not on
    PATH when bench is started as .venv/bin/bench."""
    found = (shutil.which(name, path=os.path.dirname(sys.executable)) or shutil.which(name)
             or shutil.which(name, path=os.pathsep.join(extra_dirs)))
    if not found:
        raise MissingTool(f"'{name}' not found: install it with `{how}`")
    return found


def listener_on(port: int) -> str | None:
    """Who listens on TCP port (any address), as 'pid N (name)', 'an unknown process', or None."""
    try:
        conns = psutil.net_connections("tcp")
    except (psutil.Error, OSError):
        conns = []
    for c in conns:
        if c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN:
            if c.pid:
                try:
                    return f"pid {c.pid} ({psutil.Process(c.pid).name()})"
                except psutil.Error:
                    pass
            return "an unknown process"
    return None


def scheduled_in(pid: int) -> int | None:
    """How many times the kernel has put pid's live threads on a CPU (the third field of each
    thread's schedstat): every context switch into the process. None when it is gone."""
    total, found = 0, False
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[2])
                found = True
        except (OSError, IndexError, ValueError):
            continue   # a thread that ended meanwhile
    return total if found else None


def is_loopback(address: str) -> bool:
    """127.0.0.0/8, ::1, and IPv4 loopback in IPv6 form (::ffff:127.0.0.1, as dual-stack JVMs bind)."""
    ip = ipaddress.ip_address(address.split("%")[0])
    if ip.version == 6 and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def public_listeners(pid: int) -> list[str]:
    """Listening sockets of pid (and its children) bound to anything but the loopback address."""
    try:
        procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []
    found = []
    for p in procs:
        try:
            conns = p.net_connections("inet")
        except psutil.Error:
            continue
        for c in conns:
            if c.status == psutil.CONN_LISTEN and not is_loopback(c.laddr.ip):
                found.append(f"{c.laddr.ip}:{c.laddr.port}")
    return sorted(set(found))


def netns_tcp_table(pid: int | str) -> str:
    """/proc/net/tcp and tcp6 of the network namespace pid runs in, as one text (tcp6 may be absent)."""
    tables = []
    for name in ("tcp", "tcp6"):
        try:
            tables.append(Path(f"/proc/{pid}/net/{name}").read_text())
        except OSError:
            continue
    return "\n".join(tables)


def netns_listeners(pid: int) -> list[str]:
    """Every listening TCP socket of the network namespace pid runs in, as address:port. psutil reads
    this machine's own table only; a namespace of network.py holds nothing but the run's servers."""
    return table_listeners(netns_tcp_table(pid))


def listen_sockets(table: str) -> list[tuple[str, int, int, str]]:
    """(address, port, accept queue length, inode) of each listening socket in /proc/net/tcp and tcp6
    text (header lines are skipped). For a socket in LISTEN state (0A) the rx_queue field is its accept
    queue: connections the kernel completed that the server has not yet accept()ed."""
    found = []
    for line in table.splitlines():
        fields = line.split()
        if len(fields) < 10 or fields[3] != "0A" or ":" not in fields[1]:   # 0A: LISTEN
            continue
        hex_ip, hex_port = fields[1].split(":")
        raw = bytes.fromhex(hex_ip)
        # /proc prints each 32-bit word in host (little-endian) order
        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
        ip = ipaddress.ip_address(raw)
        ip = ip.ipv4_mapped or ip if ip.version == 6 else ip   # a dual-stack JVM's IPv4 bind
        found.append((str(ip), int(hex_port, 16), int(fields[4].split(":")[1], 16), fields[9]))
    return found


def table_listeners(table: str, inodes: set[str] | None = None) -> list[str]:
    """The listening sockets of /proc/net/tcp and tcp6 text as address:port; only those whose inode is
    in inodes, when given."""
    return sorted({f"{ip}:{port}" for ip, port, _, inode in listen_sockets(table) if inodes is None or inode in inodes})


def beyond(listeners: list[str], allowed: list[str]) -> list[str]:
    """The listeners bound to neither loopback nor an allowed address."""
    return [a for a in listeners if not is_loopback(a.rpartition(":")[0]) and a.rpartition(":")[0] not in allowed]


def listening_beyond(pid: int, allowed: list[str], own_namespace: bool) -> list[str]:
    """Listeners of pid on anything but loopback and the allowed addresses. In a namespace of its own
    the namespace's table is read (every listener in it is the run's); else psutil's, by process."""
    return beyond(netns_listeners(pid) if own_namespace else public_listeners(pid), allowed)


def ensure_port_free(port: int, what: str) -> None:
    """UsageError naming the owner when something listens on the port.

    Connections left over from a stopped or killed server (TIME_WAIT, FIN_WAIT) do not count:
    servers bind with SO_REUSEADDR and can use the port at once.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return
        except OSError:
            pass
    owner = listener_on(port)
    if owner:
        raise UsageError(f"port {port} for {what} is already in use by {owner}: stop it or choose another port")


def _tail_text(path: Path | None, size: int = 16384) -> str:
    if not path or not Path(path).exists():
        return ""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - size))
        return f.read().decode("utf-8", "replace")


def log_tail(path: Path | None, lines: int = 15) -> str:
    return "\n".join(_tail_text(path).splitlines()[-lines:])


# What a JVM's log says when it fails, most telling first: the JVM's own fatal errors, a port it
# could not bind, then the last exception it logged (the innermost "Caused by" of a trace). The
# tail of a log is often a stack trace whose first frames say nothing, and a user reads the first
# line of a failed cell's reason (the console, the report): the cause goes there.
_CAUSES = [re.compile(p) for p in (
    r"OutOfMemoryError\b.*", r"StackOverflowError\b.*", r"A fatal error has been detected.*|# (SIGSEGV|SIGBUS) .*",
    r"(BindException|Address already in use)\b.*",
    r"\b(?:[a-z_]\w*\.)+[A-Z][\w$]*(?:Exception|Error)\b.*")]


_FATAL = _CAUSES[:3]   # the JVM's own: it cannot be trusted to serve on after one


def last_cause(path: Path | None, causes: list[re.Pattern] = _CAUSES) -> str:
    """The line of a server's log that names why it failed ('' if none does)."""
    lines = [line.strip() for line in _tail_text(path, 65536).splitlines()]
    lines = [line for line in lines if line and not line.startswith(("at ", "..."))]
    for pattern in causes:
        for line in reversed(lines):
            if pattern.search(line):
                return line[:240]
    return ""


def fatal_cause(path: Path | None) -> str:
    """The line of a JVM's log that says the JVM itself failed (out of memory, a stack overflow, a
    crash), '' if none does: a load generator that hung against such a JVM hung because of it."""
    return last_cause(path, _FATAL)


def generator_failure(error: Exception, log_path: Path | None) -> tuple[str, bool]:
    """A failed load generator's reason, and whether the JVM's own failure (fatal_cause) was its cause."""
    fatal = fatal_cause(log_path)
    if fatal:
        return f"the JVM failed: {fatal} (then the load generator: {error})", True
    return f"load generator failed: {error}", False


def server_failure(what: str, log_path: Path | None) -> str:
    """A failed target's reason: what happened and the cause its log names, on one line, then the
    log's last lines."""
    cause = last_cause(log_path)
    return f"{what}{': ' + cause if cause else ''}; last lines of {log_path}:\n{log_tail(log_path)}"
