"""JVM evidence of a cell from Flight Recorder: why a target did what its figures say.

A recording is started with jcmd just before the generator's window and stopped just after it (jcmd
runs on the load-generator CPUs, outside the window), then read by the JDK's own consumer API
(jfr/JfrEvidence.java, compiled once per JDK) over exactly the window's edges, so nothing of the
warm-up and nothing of jcmd's attach is in the figures. What it reads becomes columns of the row
(schema.py, jfr_*): virtual-thread pinning, the platform threads and carriers that used CPU, time
parked, blocked on monitors, asleep and in socket reads, GC pauses and safepoints, the allocation
rate, the hottest methods, and on event-loop threads the share of samples in application code.

The settings are the JDK's `default` (its documented low-overhead profile) with lower thresholds
where the evidence needs them; THRESHOLDS says which, and the README gives the overhead measured.
The events that would record the environment or other processes' command lines are off (UNRECORDED).
The flame graph is async-profiler's converter (tools.profiler:jfr-converter on Maven Central), which
reads the JDK's jdk.ExecutionSample events.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

from orchestrator import STATE_DIR
from orchestrator.errors import BenchError
from orchestrator.infra import procs
from orchestrator.infra.tools import compiled
from orchestrator.measure import thread_dumps
from orchestrator.targets.jvm import private_tmp

SOURCE = Path(__file__).with_name("jfr") / "JfrEvidence.java"
CONVERTER = "tools.profiler:jfr-converter:4.5"
NAME = "bench"
# Events below these durations are not recorded (JFR's thresholds): a total such as jfr_parked_ms
# counts only waits at least this long. Pinning is recorded from 0 ms: any pinning is news.
THRESHOLDS = {"jdk.VirtualThreadPinned": "0ms", "jdk.ThreadPark": "10ms", "jdk.JavaMonitorEnter": "1ms",
              "jdk.ThreadSleep": "10ms", "jdk.SocketRead": "10ms"}
# Events of `default` that would put into a run's folder, which users share, what is not the target's to
# tell: its whole environment (the infrastructure's passwords among it), the command line of every
# process on the machine, and those of the processes it starts.
UNRECORDED = ("jdk.InitialEnvironmentVariable", "jdk.SystemProcess", "jdk.ProcessStart")
# Safepoints are off in `default`; on, their total is a figure rather than a silent zero.
SETTINGS = [*(f"{event}#threshold={t}" for event, t in THRESHOLDS.items()),
            "jdk.SafepointBegin#enabled=true", "jdk.SafepointBegin#threshold=0ms",
            "jdk.ThreadCPULoad#period=1s", "jdk.ExecutionSample#period=20ms",
            # each thread's allocated bytes, read around every window (JfrEvidence: jfr_alloc_mb_per_s)
            "jdk.ThreadAllocationStatistics#period=100ms",
            *(f"{event}#enabled=false" for event in UNRECORDED)]
# The allocation readings (every 100 ms) must bracket each window: a few before it starts and after it
# ends, which a generator that starts at once and exits with its last response (pacer) leaves no time for.
BRACKET_S = 0.3
JCMD_TIMEOUT_S = 60.0
# What recording cost here (README: "Why, from Flight Recorder"), stated in every row recorded with it
# and in the run's warnings: more than this machine's noise, and not the same for every target.
COST = ("Flight Recorder on: measured here at 64 connections, 2 fresh JVMs a side interleaved, rps -14 to -20 % "
        "and p99 x1.3-2.5 on json, rps -6 to -11 % and p99 x1.2 on db-read (Spring MVC virtual, WebFlux "
        "reactive and virtual)")


class RecordingFailed(BenchError):
    pass


def _jcmd(jdk_home: Path, pid: int, args: list[str], cpus: str) -> str:
    argv = procs.pinned([str(jdk_home / "bin" / "jcmd"), str(pid), *args], cpus)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=JCMD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RecordingFailed(f"jcmd {args[0]} did not answer within {JCMD_TIMEOUT_S:.0f} s") from None
    # jcmd exits 0 even when the command failed inside the JVM; its output says so.
    if done.returncode != 0 or "error" in done.stdout.lower() or "could not" in done.stdout.lower():
        raise RecordingFailed(f"jcmd {pid} {args[0]} failed: {(done.stdout + done.stderr).strip()[-300:]}")
    return done.stdout


def _compiled(jdk_home: Path) -> Path:
    """JfrEvidence compiled by this JDK, once per source and JDK."""
    return compiled("jfr-evidence", SOURCE, [str(jdk_home / "bin" / "javac"), "-d", "{out}", str(SOURCE)],
                    extra_key=str(jdk_home.resolve()))


def evidence(jdk_home: Path, path: Path, windows: list[tuple[float, float]], cpus: str) -> list[dict]:
    """The jfr_* columns of each window (epoch seconds), read from the recording at `path`."""
    argv = procs.pinned([str(jdk_home / "bin" / "java"), "-cp", str(_compiled(jdk_home)), "JfrEvidence", str(path),
                         *(f"{int(a * 1000)}:{int(b * 1000)}" for a, b in windows)], cpus)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RecordingFailed(f"could not read {path}: {done.stderr.strip()[-500:]}")
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    if len(rows) != len(windows):
        raise RecordingFailed(f"reading {path} gave {len(rows)} windows of {len(windows)}")
    return rows


def converter_jar() -> Path:
    """async-profiler's jfr-converter from Maven Central, fetched once (Maven's own cache serves it offline)."""
    _, artifact, version = CONVERTER.split(":")
    jar = STATE_DIR / "tools" / f"{artifact}-{version}.jar"
    if not jar.exists():
        mvn = procs.require_tool("mvn", "apt-get install -y maven")
        done = subprocess.run([mvn, "-q", "-B", "dependency:copy", f"-Dartifact={CONVERTER}",
                               f"-DoutputDirectory={jar.parent}"], capture_output=True, text=True, timeout=600)
        if done.returncode != 0 or not jar.exists():
            raise BenchError(f"could not fetch {CONVERTER} with Maven: {(done.stdout + done.stderr).strip()[-400:]}")
    return jar


def flame_graph(jdk_home: Path, path: Path, html: Path, window: tuple[float, float], title: str, cpus: str) -> Path:
    """The recording's CPU samples inside the window (epoch seconds) as an interactive flame graph
    (one HTML file)."""
    # CPU samples of running threads (its --cpu alone drew nothing from a JDK recording in 4.5)
    argv = procs.pinned([str(jdk_home / "bin" / "java"), "-jar", str(converter_jar()), "-s", "runnable",
                         "--from", str(int(window[0] * 1000)), "--to", str(int(window[1] * 1000)),
                         "--title", title, str(path), str(html)], cpus)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if done.returncode != 0 or not html.exists():
        raise RecordingFailed(f"could not draw {html.name}: {(done.stdout + done.stderr).strip()[-400:]}")
    return html


class CellRecorder:
    """The recordings of one cell's loads (one file per load, named by it), and the columns read from
    them. Off, it records nothing and every jfr_* column stays null: not measured, not zero. A
    recording that fails (no attach, an unreadable file) leaves them null too, with the reason in
    jfr_error; the measurement itself stands, so the row is not flagged. While it records, thread dumps
    are sampled too (thread_dumps.py: the dump_* columns, threads waiting on locks in application code)."""

    def __init__(self, jdk_home: Path, pid: int | None, folder: Path, run_dir: Path, cpus: str, on: bool):
        self.jdk_home, self.pid, self.folder, self.run_dir, self.cpus, self.on = jdk_home, pid, folder, run_dir, cpus, on
        self.failures: dict[str, str] = {}
        self.dumps: dict[str, thread_dumps.ThreadDumps] = {}

    @contextmanager
    def load(self, name: str):
        if not self.on:
            yield
            return
        path = self.folder / f"{name}.jfr"
        if self.pid is None:
            self.failures[name] = "the target runs on a remote Docker engine: jcmd cannot attach to it from here"
            yield
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            path.unlink(missing_ok=True)
            _jcmd(self.jdk_home, self.pid, ["JFR.start", f"name={NAME}", "settings=default", *SETTINGS], self.cpus)
        except RecordingFailed as e:
            self.failures[name] = str(e)
            yield
            return
        dumps = self.dumps[name] = thread_dumps.ThreadDumps(self.pid, self.folder / f"{name}-threads.jsonl").start()
        time.sleep(BRACKET_S)
        try:
            yield
        finally:
            dumps.stop()
            time.sleep(BRACKET_S)
            try:
                self._stop(path)
            except (RecordingFailed, OSError) as e:
                self.failures[name] = str(e)

    def _stop(self, path: Path) -> None:
        """The recording stopped into `path`. The JVM writes it in its own file system (a container's /tmp),
        and it is taken from there through /proc/<pid>/root, which for a local process is this one's;
        owner-only, as every file of the run, whatever the JVM's umask (a container's is its image's)."""
        with private_tmp(self.pid) as (inside, outside):
            _jcmd(self.jdk_home, self.pid, ["JFR.stop", f"name={NAME}", f"filename={inside}/{path.name}"], self.cpus)
            shutil.move(outside / path.name, path)
        path.chmod(0o600)

    def add(self, name: str, windows: list, rows: list[dict]) -> list[dict]:
        """rows (one per measured window: a LoadResult, or a ramp's steps) with the jfr_* columns of
        their windows, the recording's file and its flame graph (paths relative to the run's folder)."""
        if not self.on:
            return rows
        windows = [(w.started_at, w.started_at + w.duration_s) for w in windows]
        path = self.folder / f"{name}.jfr"
        try:
            if name in self.failures:
                raise RecordingFailed(self.failures[name])
            columns = evidence(self.jdk_home, path, windows, self.cpus)
            graph = flame_graph(self.jdk_home, path, path.with_suffix(".html"), (windows[0][0], windows[-1][1]),
                                f"{self.folder.name} {name}: CPU samples of the measured window", self.cpus)
        except BenchError as e:
            return [{**row, "jfr_error": str(e)} for row in rows]
        files = {"jfr_file": str(path.relative_to(self.run_dir)), "jfr_flamegraph": str(graph.relative_to(self.run_dir)),
                 "jfr_cost": COST}
        dumps = self.dumps[name]
        waits = [thread_dumps.columns(dumps.summaries, w) for w in windows]
        if dumps.error:
            files["jfr_error"] = dumps.error
        return [{**row, **cols, **wait, **files} for row, cols, wait in zip(rows, columns, waits)]
