"""oha (crates.io; not packaged in Debian): a closed loop for a fixed time, reported as JSON.

It runs no profile kind (its registry entry says so): `bench calibrate` measures its ceiling beside the
other generators', a second opinion on what this machine can send. It reports counts only, no latencies.
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

from orchestrator.config.driver_registry import info
from orchestrator.config.load import LoadResult, LoadSpec
from orchestrator.core.cpus import cpu_count
from orchestrator.drivers.base import Driver, DriverFailed, run_generator
from orchestrator.infra.procs import log_tail, require_tool


class OhaDriver(Driver):
    name = "oha"
    walks_ids = False

    def executable(self) -> str:
        # `cargo install` puts it in ~/.cargo/bin, which is often not on PATH
        tool = info(self.name).tools[0]
        return require_tool(tool.executable, tool.how, extra_dirs=(str(Path.home() / ".cargo" / "bin"),))

    def run(self, spec: LoadSpec) -> LoadResult:
        self.can_send(spec)
        oha = self.executable()
        out, log = self.files(spec, "json", "log")
        duration = max(1, math.ceil(spec.duration_s))
        # oha sizes its thread pool by the machine's cores, not by the CPUs it is pinned to.
        argv = [oha, "-z", f"{duration}s", "-c", str(spec.concurrency), "-t", f"{math.ceil(spec.timeout_s)}s",
                "--worker-threads", str(cpu_count(spec.cpus)), "--no-tui", "--output-format", "json",
                "-o", str(out), spec.url]
        started = time.time()
        rc, wall_s, cpu_s = run_generator(argv, log, deadline_s=duration + spec.timeout_s + 30, cpus=spec.cpus)
        if rc != 0 or not out.exists():
            raise DriverFailed(f"oha exited with {rc}: {log_tail(log, 5) or 'no output'}")
        try:
            doc = json.loads(out.read_text())
            codes = {int(k): v for k, v in doc["statusCodeDistribution"].items()}
            # Requests still in flight when -z ends are cut off and listed as errors: not the server's.
            errors = {k: n for k, n in doc.get("errorDistribution", {}).items() if k != "aborted due to deadline"}
            return LoadResult(requests=sum(codes.values()), duration_s=doc["summary"]["total"],
                              errors_status=sum(n for code, n in codes.items() if code >= 400),
                              errors_read=sum(errors.values()),
                              loadgen_cpu_s=cpu_s, loadgen_wall_s=wall_s, started_at=started)
        except (ValueError, KeyError, TypeError) as e:
            raise DriverFailed(f"oha wrote an unreadable summary ({e}): {out}") from None
