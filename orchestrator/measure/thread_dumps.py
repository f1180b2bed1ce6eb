"""Where a target's threads wait, from thread dumps taken during the measured window: the evidence of a
limit inside application code (a semaphore, a lock, a synchronized block) that no pool size, backend
count or Flight Recorder total shows.

Flight Recorder cannot see it on virtual threads: JDK 25 emits jdk.ThreadPark only for platform
threads (a virtual thread that parks unmounts and records nothing; measured here: 64 virtual threads
contending for a semaphore of 2 for 3 s gave no park event of theirs), and its park threshold
(flight_recorder.THRESHOLDS) hides short waits on platform threads. The JDK's JSON thread dump
(`jcmd PID Thread.dump_to_file -format=json`) lists every thread, virtual ones included, with its
state, what it is parked on and its stack. A thread counts as waiting on a lock in application code
when the application took it: blocked entering a monitor of an application frame (its top frame), or
parked on a lock, semaphore or condition that an application frame asked for itself (the frame above
it is the lock's own API). A monitor or lock the JDK takes inside its own code does not count, though
the application called that code (package `bench`, or the test fixture, is the application).

The dumps are asked for over HotSpot's attach socket from this process (the protocol jcmd speaks),
not by starting jcmd, whose JVM would take a fraction of a second of the load generator's CPU each
time. They are taken every INTERVAL_S (less often where a dump costs more: DUTY_FACTOR) while a
recorded load runs and summarised after it (the summaries are kept in the run's jfr folder as JSON
lines); each window gets the mean over the dumps taken inside it.
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import threading
import time
from collections import Counter
from pathlib import Path

from orchestrator.targets.jvm import namespace_pid, owner_uid, private_tmp

INTERVAL_S = 0.5
# A dump takes CPU time on the server's CPU (in the JVM's Attach Listener thread, read from its
# schedstat): the next dump waits at least DUTY_FACTOR times that, so dumping takes at most 2 % of the
# window's CPU, and each window states what its dumps took (dump_cpu_ms).
DUTY_FACTOR = 50
LISTENER = "Attach Listener"
ATTACH_TIMEOUT_S = 10.0
# Application code, as JfrEvidence.APP: every target's own classes are in package bench, the fixture's in Fixture.
APP = re.compile(r"^(bench\.|Fixture\b)")
# What a thread waits on when it waits for a permit, a lock or a condition: not a future's result,
# which is waiting for a backend's answer.
LOCK = re.compile(r"^java\.util\.concurrent\.(Semaphore|locks\.\w+)\$|^java\.util\.concurrent\.locks\.StampedLock")
JDK_FRAME = re.compile(r"^(java|jdk)\.[\w.]+/")
# The call of a lock's own API (Semaphore.acquire, ReentrantLock.lock, Condition.await ...)
LOCK_CALL = re.compile(r"^java\.util\.concurrent\.(Semaphore|CountDownLatch|CyclicBarrier|Phaser|locks\.)")


class AttachFailed(Exception):
    pass


def _attach_socket(pid: int) -> Path:
    """HotSpot's attach socket of the JVM, started as jcmd starts it (a trigger file, then SIGQUIT), and
    trusted only when it is a socket of the JVM's own user: in the shared /tmp, anyone could have put
    a socket of theirs at its name, to read the commands and answer them."""
    nspid = namespace_pid(pid)
    tmp = Path(f"/proc/{pid}/root/tmp")
    sock = tmp / f".java_pid{nspid}"
    if not sock.exists():
        _start_attach(pid, tmp / f".attach_pid{nspid}", sock)
    st, uid = os.lstat(sock), owner_uid(pid)
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != uid:
        raise AttachFailed(f"{sock} is not the JVM's: a {'socket' if stat.S_ISSOCK(st.st_mode) else 'file'} of "
                           f"user {st.st_uid}, where JVM {pid} runs as user {uid}; not trusted")
    return sock


def _start_attach(pid: int, trigger: Path, sock: Path) -> None:
    # O_NOFOLLOW: a link put at the trigger's name would have root create, or touch, the file it names
    os.close(os.open(trigger, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600))
    try:
        os.kill(pid, signal.SIGQUIT)
        deadline = time.monotonic() + ATTACH_TIMEOUT_S
        while not sock.exists():
            if time.monotonic() > deadline:
                raise AttachFailed(f"the JVM {pid} opened no attach socket within {ATTACH_TIMEOUT_S:.0f} s")
            time.sleep(0.05)
    finally:
        trigger.unlink(missing_ok=True)


def jcmd(pid: int, command: str, timeout_s: float = 30.0) -> str:
    """One diagnostic command, as `jcmd PID command` runs it, through the attach protocol (version 1)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout_s)
        try:
            s.connect(str(_attach_socket(pid)))
            s.sendall(b"1\0jcmd\0" + command.encode() + b"\0\0\0")
            reply = b"".join(iter(lambda: s.recv(65536), b""))
        except OSError as e:
            raise AttachFailed(f"attaching to JVM {pid} for {command.split()[0]}: {e}") from None
    code, _, out = reply.decode(errors="replace").partition("\n")
    if code.strip() != "0":
        raise AttachFailed(f"{command.split()[0]} in JVM {pid} answered {code.strip()}: {out.strip()[:300]}")
    return out


def _class_of(frame: str) -> str:
    """'app//bench.mvc.X.y(X.kt:3)' -> 'bench.mvc.X.y(X.kt:3)': without the module or class loader."""
    return frame.rsplit("/", 1)[-1] if "/" in frame.split("(", 1)[0] else frame


def waiting_site(thread: dict) -> str | None:
    """Where a thread waits on a lock its application code took (its first frame below the JDK's own,
    and what it waits on), or None when it does not."""
    blocker = (thread.get("parkBlocker") or {}).get("object", "")
    state = thread.get("state", "")
    on_lock = state == "BLOCKED" or (state in ("WAITING", "TIMED_WAITING") and bool(LOCK.match(blocker)))
    if not on_lock:
        return None
    stack = thread.get("stack", [])
    for i, frame in enumerate(stack):
        if not JDK_FRAME.match(frame):
            caller = _class_of(frame)
            # the application's own lock: a monitor its frame enters, or a lock it asked for itself; not one
            # the JDK took on its behalf (the JDK's HTTP server's monitor, entered from Fixture.send, held
            # 6.5 threads on average while the host stole the CPU that held it)
            took = i == 0 if state == "BLOCKED" else i > 0 and bool(LOCK_CALL.match(_class_of(stack[i - 1])))
            if not APP.match(caller) or not took:
                return None
            what = "a monitor" if state == "BLOCKED" else blocker.split("@")[0].rsplit(".", 1)[-1]
            return f"{caller} on {what}"
    return None


def summary(doc: dict, taken_at: float, cpu_s: float) -> dict:
    """One dump as: when, what it cost the JVM, how many threads, how many wait on a lock in application
    code, and where."""
    threads = [t for c in doc["threadDump"]["threadContainers"] for t in c["threads"]]
    sites = Counter(site for site in map(waiting_site, threads) if site)
    return {"time": taken_at, "cpu_ms": 1000 * cpu_s, "threads": len(threads),
            "app_lock_waiting": sum(sites.values()), "sites": dict(sites)}


def _listener_cpu_s(pid: int) -> float:
    """CPU time the JVM's Attach Listener thread has used (it runs every dump), in seconds."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            if (task / "comm").read_text().strip() == LISTENER:
                return int((task / "schedstat").read_text().split()[0]) / 1e9
        except OSError:
            continue   # a thread that ended while the folder was read
    raise AttachFailed(f"the JVM {pid} has no {LISTENER} thread")


def columns(summaries: list[dict], window: tuple[float, float]) -> dict:
    """The dump_* columns of one window: dumps inside it, threads waiting on locks in application code
    (mean over them), and the site most of those waited at, with its share."""
    inside = [s for s in summaries if window[0] <= s["time"] < window[1]]
    if not inside:
        return {"dump_samples": 0}
    sites = Counter()
    for s in inside:
        sites.update(s["sites"])
    waiting = sum(s["app_lock_waiting"] for s in inside)
    top = ""
    if sites:
        site, n = sites.most_common(1)[0]
        top = f"{site} ({100 * n / waiting:.0f} %)"
    return {"dump_samples": len(inside), "dump_cpu_ms": sum(s["cpu_ms"] for s in inside),
            "dump_app_lock_waiting": waiting / len(inside), "dump_app_lock_site": top}


class ThreadDumps:
    """Thread dumps of one JVM every INTERVAL_S while it is running (between start and stop). Each is only
    read during the load; stop() parses and summarises them, so that the JSON of thousands of threads is
    not parsed on the load generator's CPU while it drives the window, and appends the summaries to `log`
    (JSON lines). A dump that fails ends the sampling; `error` says why."""

    def __init__(self, pid: int, log: Path):
        self.pid, self.log = pid, log
        self.summaries: list[dict] = []
        self.error: str | None = None
        self._taken: list[tuple[float, float, str]] = []   # (when, the JVM's CPU seconds, the dump's JSON)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"thread-dumps-{pid}", daemon=True)

    def start(self) -> ThreadDumps:
        self._thread.start()
        return self

    def stop(self) -> list[dict]:
        self._stop.set()
        self._thread.join(timeout=60)
        with open(self.log, "a") as log:
            for taken_at, cpu_s, text in self._taken:
                try:
                    s = summary(json.loads(text), taken_at, cpu_s)
                except (ValueError, KeyError) as e:
                    self.error = f"thread dump: {e}"
                    break
                self.summaries.append(s)
                log.write(json.dumps(s) + "\n")
        self._taken.clear()
        return self.summaries

    def _loop(self) -> None:
        try:
            # Written in the JVM's own file system (a container's /tmp), in a folder of its own, and read
            # through /proc/<pid>/root.
            with private_tmp(self.pid) as (inside, outside):
                self._dump_until_stopped(f"{inside}/threads.json", outside / "threads.json")
        except (AttachFailed, OSError) as e:
            self.error = f"thread dump: {e}"

    def _dump_until_stopped(self, inside: str, outside: Path) -> None:
        # The first dump starts at once and does not set the pace: it loads the JVM's dump code, which
        # makes it several times dearer than the next ones, and it is taken before the window opens.
        pause = 0.0
        while not self._stop.wait(pause):
            taken_at = time.time()
            _attach_socket(self.pid)   # started before its thread's CPU time is read
            before = _listener_cpu_s(self.pid)
            jcmd(self.pid, f"Thread.dump_to_file -format=json -overwrite {inside}")
            cpu_s = _listener_cpu_s(self.pid) - before
            pause = max(INTERVAL_S, DUTY_FACTOR * cpu_s) if self._taken else INTERVAL_S
            self._taken.append((taken_at, cpu_s, outside.read_text()))
