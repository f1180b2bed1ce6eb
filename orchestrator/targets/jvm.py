"""JVM command lines, the JVM's own counters read from its hsperfdata file, and what bench trusts in a
running JVM's file system.

The counters (GC invocations and time, live threads) come from the memory-mapped file every
HotSpot JVM publishes under /tmp/hsperfdata_<user>/<pid> (what jstat reads), so reading them
attaches nothing to the server and costs it no CPU.

A file the JVM writes for bench to take (a recording, a thread dump) goes into a folder made for it
(`private_tmp`): a fixed name in the shared /tmp is one another user can put a link at first, which a
JVM running as root would follow.
"""
from __future__ import annotations

import os
import pwd
import shutil
import struct
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil

from orchestrator.config.catalog import Target
from orchestrator.core.cpus import cpu_count


def jvm_options(target: Target, heap: str, cpus: str) -> list[str]:
    """The options every target gets alike, then the variant's own, then its system properties."""
    v = target.variant
    return [f"-Xms{heap}", f"-Xmx{heap}", f"-XX:ActiveProcessorCount={cpu_count(cpus)}",
            *v.jvm_opts, *(f"-D{k}={val}" for k, val in v.properties.items())]


def command_line(target: Target, java: str, jvm_opts: list[str], artifact: str) -> list[str]:
    """The manifest's start command with its placeholders filled in, as an argv list."""
    argv: list[str] = []
    for arg in target.framework.start_command:
        if arg == "{jvm_opts}":
            argv += jvm_opts
        else:
            argv.append({"{java}": java, "{artifact}": artifact}.get(arg, arg))
    return argv


@dataclass(frozen=True)
class JvmCounters:
    gc_count: int
    gc_time_s: float
    threads: int
    collector: str
    jit_time_s: float = 0.0   # time the JIT compilers spent compiling since start (java.ci.totalTime)
    compiles: int = 0


def _perf_file(pid: int) -> Path | None:
    """The hsperfdata file of pid, also for a JVM inside a container (through /proc/pid/root)."""
    try:
        proc = psutil.Process(pid)
        user = pwd.getpwuid(proc.uids().effective).pw_name
    except (psutil.Error, KeyError):
        user = None
    candidates = []
    if user:
        candidates.append(Path(f"/tmp/hsperfdata_{user}/{pid}"))
    root = Path(f"/proc/{pid}/root/tmp")
    ns_pid = namespace_pid(pid)
    candidates += sorted(root.glob(f"hsperfdata_*/{ns_pid}")) if root.exists() else []
    return next((c for c in candidates if c.exists()), None)


def namespace_pid(pid: int) -> int:
    """The pid the JVM knows itself by (a container's own), which names its files in /tmp."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    except OSError:
        pass
    return pid


def owner_uid(pid: int) -> int:
    """The effective user id a running process acts as (this machine's number for it); OSError once it exited."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[2])
    raise OSError(f"process {pid} has no user id")


@contextmanager
def private_tmp(pid: int):
    """A fresh folder in the JVM's own /tmp (a container's, through /proc/<pid>/root) that only the JVM's
    user enters (and root): (the folder as the JVM names it, the folder as this process reaches it).
    Removed with what is left in it."""
    root = Path(f"/proc/{pid}/root")
    outside = Path(tempfile.mkdtemp(prefix="bench-", dir=root / "tmp"))
    try:
        uid = owner_uid(pid)
        if uid != os.geteuid():
            os.chown(outside, uid, -1)   # a container's JVM runs as a user of its own
        yield f"/{outside.relative_to(root)}", outside
    finally:
        shutil.rmtree(outside, ignore_errors=True)


def parse_perfdata(data: bytes) -> dict[str, int | str]:
    """All long and string counters of an hsperfdata file's bytes, by name."""
    if data[:4] != b"\xca\xfe\xc0\xc0":
        raise ValueError("not an hsperfdata file")
    order = "<" if data[4] == 1 else ">"
    entry_offset, num_entries = struct.unpack_from(order + "ii", data, 24)
    out: dict[str, int | str] = {}
    pos = entry_offset
    for _ in range(num_entries):
        length, name_off, vec_len, dtype, _flags, _units, _var, data_off = struct.unpack_from(
            order + "iiiBBBBi", data, pos)
        name = data[pos + name_off:data.index(b"\0", pos + name_off)].decode("ascii", "replace")
        if dtype == ord("J") and vec_len == 0:
            out[name] = struct.unpack_from(order + "q", data, pos + data_off)[0]
        elif dtype == ord("B") and vec_len > 0:
            raw = data[pos + data_off:pos + data_off + vec_len]
            out[name] = raw.split(b"\0", 1)[0].decode("utf-8", "replace")
        pos += length
    return out


def read_counters(pid: int) -> JvmCounters | None:
    """GC count and time summed over the collectors, live threads and JIT compilation; None if unreadable."""
    path = _perf_file(pid)
    if path is None:
        return None
    try:
        return counters_of(path.read_bytes())
    except OSError:
        return None


def counters_of(data: bytes) -> JvmCounters | None:
    """The JvmCounters of an hsperfdata file's bytes; None if they are not one (or a torn read)."""
    try:
        c = parse_perfdata(data)
    except (ValueError, struct.error):
        return None
    freq = c.get("sun.os.hrt.frequency") or 1_000_000_000
    count = ticks = 0
    names = []
    for i in range(4):
        inv = c.get(f"sun.gc.collector.{i}.invocations")
        if inv is None:
            continue
        count += int(inv)
        ticks += int(c.get(f"sun.gc.collector.{i}.time", 0))
        names.append(str(c.get(f"sun.gc.collector.{i}.name", "")))
    return JvmCounters(gc_count=count, gc_time_s=ticks / float(freq),
                       threads=int(c.get("java.threads.live", 0)),
                       jit_time_s=int(c.get("java.ci.totalTime", 0)) / float(freq),
                       compiles=int(c.get("sun.ci.totalCompiles", 0)),
                       collector=str(c.get("sun.gc.policy", "")) or "+".join(n for n in names if n))
