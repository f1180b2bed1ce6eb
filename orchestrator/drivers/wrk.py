"""wrk: closed loop, one connection per in-flight request; a Lua done() writes the summary as JSON."""
from __future__ import annotations

import json
import math
from pathlib import Path

from ..jvm import cpu_count
from ..procs import log_tail
from .base import PERCENTILES, Driver, DriverFailed, LoadResult, LoadSpec, run_generator

# Runs in wrk's summary Lua state; OUT is defined above it. `response` stays nil on purpose:
# wrk then skips handing bodies to Lua, and summary.errors.status still counts statuses >= 400.
_DONE = r"""
local function num(x) if x ~= x then return "null" end return string.format("%.3f", x) end
done = function(summary, latency, requests)
  local e = summary.errors
  local parts = {
    string.format('"requests":%d,"duration_us":%d,"bytes":%d', summary.requests, summary.duration, summary.bytes),
    string.format('"connect":%d,"read":%d,"write":%d,"timeout":%d,"status":%d', e.connect, e.read, e.write, e.timeout, e.status),
  }
  if summary.requests > 0 then
    table.insert(parts, string.format('"min":%d,"max":%d,"mean":%s,"stdev":%s', latency.min, latency.max, num(latency.mean), num(latency.stdev)))
    for _, p in ipairs(PCTS) do
      table.insert(parts, string.format('"p%s":%d', tostring(p), latency:percentile(p)))
    end
  end
  local f = assert(io.open(OUT, "w"))
  f:write("{" .. table.concat(parts, ",") .. "}\n")
  f:close()
end
"""


def lua_string(value: str) -> str:
    """A Lua string literal for any text: printable ASCII as is, every other byte as \\ddd."""
    out = []
    for b in value.encode("utf-8"):
        ch = chr(b)
        out.append(ch if 32 <= b < 127 and ch not in '"\\' else f"\\{b:03d}")
    return '"' + "".join(out) + '"'


def lua_script(spec: LoadSpec, out_json: Path) -> str:
    s = spec.scenario
    lines = [f"OUT = {lua_string(str(out_json))}",
             "PCTS = {" + ", ".join(str(p) for p in PERCENTILES.values()) + "}",
             f"wrk.method = {lua_string(s.method)}"]
    if s.body is not None:
        lines.append(f"wrk.body = {lua_string(s.body.decode())}")
    for k, v in s.headers.items():
        lines.append(f"wrk.headers[{lua_string(k)}] = {lua_string(v)}")
    return "\n".join(lines) + "\n" + _DONE


def parse_summary(doc: dict, loadgen_cpu_s: float) -> LoadResult:
    """The JSON written by done() -> LoadResult (microseconds become milliseconds)."""
    def ms(key):
        v = doc.get(key)
        return float("nan") if v is None else v / 1000.0
    return LoadResult(
        requests=doc["requests"], duration_s=doc["duration_us"] / 1e6, bytes=doc["bytes"],
        errors_connect=doc["connect"], errors_read=doc["read"], errors_write=doc["write"],
        errors_timeout=doc["timeout"], errors_status=doc["status"],
        latency_min=ms("min"), latency_mean=ms("mean"), latency_stdev=ms("stdev"),
        latency_max=ms("max"), loadgen_cpu_s=loadgen_cpu_s,
        **{f"latency_{k}": ms(f"p{'99.9' if k == 'p999' else p}") for k, p in PERCENTILES.items()})


class WrkDriver(Driver):
    name = "wrk"
    install = "apt-get install -y wrk"

    def run(self, spec: LoadSpec) -> LoadResult:
        wrk = self.executable()
        spec.out_dir.mkdir(parents=True, exist_ok=True)
        stem = f"wrk-{spec.stem}"
        script, out_json, log = (spec.out_dir / f"{stem}.lua", spec.out_dir / f"{stem}.json",
                                 spec.out_dir / f"{stem}.log")
        out_json.unlink(missing_ok=True)
        script.write_text(lua_script(spec, out_json))
        threads = max(1, min(cpu_count(spec.cpus), spec.concurrency))
        duration = max(1, math.ceil(spec.duration_s))
        argv = [wrk, f"-t{threads}", f"-c{spec.concurrency}", f"-d{duration}s",
                f"--timeout={math.ceil(spec.timeout_s)}s", "-s", str(script), spec.url]
        rc, _wall, cpu_s = run_generator(argv, log, deadline_s=duration + spec.timeout_s + 30, cpus=spec.cpus)
        if rc != 0 or not out_json.exists():
            raise DriverFailed(f"wrk exited with {rc}: {log_tail(log, 5) or 'no output'}")
        try:
            return parse_summary(json.loads(out_json.read_text()), cpu_s)
        except (ValueError, KeyError) as e:
            raise DriverFailed(f"wrk wrote an unreadable summary ({e}): {out_json}") from None
