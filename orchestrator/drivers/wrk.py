"""wrk: closed loop, one connection per in-flight request; a Lua done() writes the summary as JSON."""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

from orchestrator.config.load import LoadResult, LoadSpec
from orchestrator.core.cpus import cpu_count
from orchestrator.core.schema import PERCENTILES, percentile_label
from orchestrator.drivers.base import Driver, DriverFailed, run_generator
from orchestrator.infra.procs import log_tail

# Runs in wrk's summary Lua state; OUT, PCTS and CONNECTIONS are defined above it. `response` stays nil
# on purpose: wrk then skips handing bodies to Lua, and summary.errors.status still counts statuses >= 400.
#
# wrk 4.1 "corrects" its latency histogram for coordinated omission before done() sees it
# (stats_correct in src/stats.c, called from src/wrk.c with interval E = duration / (requests /
# connections)): every recorded sample n >= 2E adds synthetic samples at n-E, n-2E, ... down to
# just above E. Its mean and percentiles are then not measurements. The correction is exact and
# reversible: reading the histogram bucket by bucket from the top, a bucket m > E holds its own
# samples plus one synthetic sample per sample at m+E, m+2E, ..., so raw[m] = corrected[m] minus
# the raw samples already seen at m+kE. LuaJIT's ffi reads wrk's histogram (the stats struct the
# userdata points to) without a C call per bucket. The corrected mean and p99 are written too,
# under their own keys, so that the difference can be shown; they never replace the raw figures.
_DONE = r"""
local ffi = require("ffi")
local function num(x) if x ~= x then return "null" end return string.format("%.3f", x) end
done = function(summary, latency, requests)
  local e = summary.errors
  local parts = {
    string.format('"requests":%d,"duration_us":%d,"bytes":%d', summary.requests, summary.duration, summary.bytes),
    string.format('"connect":%d,"read":%d,"write":%d,"timeout":%d,"status":%d',
      e.connect, e.read, e.write, e.timeout, e.status),
  }
  -- struct stats { uint64_t count, limit, min, max; uint64_t data[]; }
  local s = ffi.cast("uint64_t **", latency)[0]
  local lo, hi = tonumber(s[2]), tonumber(s[3])
  if tonumber(s[0]) > 0 then
    local per = math.floor(summary.requests / CONNECTIONS)
    local E = per > 0 and math.floor(summary.duration / per) or hi + 1
    local carry = {}
    local vals, cnts, n, sum = {}, {}, 0, 0
    for m = hi, lo, -1 do
      local c = tonumber(s[4 + m])
      if m > E then
        local r = m % E
        local raw = c - (carry[r] or 0)
        carry[r] = (carry[r] or 0) + raw
        c = raw
      end
      if c > 0 then
        vals[#vals + 1], cnts[#cnts + 1] = m, c
        n, sum = n + c, sum + c * m
      end
    end
    local mean, var = sum / n, 0
    for i = 1, #vals do var = var + cnts[i] * (vals[i] - mean) ^ 2 end
    table.insert(parts, string.format('"samples":%d,"min":%d,"max":%d,"mean":%s,"stdev":%s',
      n, vals[#vals], vals[1], num(mean), num(math.sqrt(var / n))))
    -- nearest rank, as every other driver: the smallest value with at least ceil(p% of n) samples at or below it
    for _, p in ipairs(PCTS) do
      local rank, seen = math.max(1, math.ceil(p / 100 * n)), 0
      for i = #vals, 1, -1 do
        seen = seen + cnts[i]
        if seen >= rank then table.insert(parts, string.format('"p%s":%d', tostring(p), vals[i])) break end
      end
    end
    table.insert(parts, string.format('"co_interval_us":%d,"co_mean":%s,"co_p99":%d',
      E, num(latency.mean), latency:percentile(99)))
  end
  local f = assert(io.open(OUT, "w"))
  f:write("{" .. table.concat(parts, ",") .. "}\n")
  f:close()
end
"""


# A scenario that walks ids (config/items.py's IdCycle): each thread its own stream, from its own
# offset in the cycle (setup() runs in the main state, once per thread, before the thread's init()).
_IDS = r"""
local streams = 0
function setup(thread) thread:set("STREAM", streams); streams = streams + 1 end
function init(args) K = math.floor(STREAM * LENGTH / THREADS) end
function request()
  local k = K % LENGTH
  K = K + 1
  local id = (k % EVERY == 0) and (FIRST + math.floor(k / EVERY)) or HOT
  return wrk.format(nil, PREFIX .. string.format("%d", id))
end
"""


def lua_string(value: str) -> str:
    """A Lua string literal for any text: printable ASCII as is, every other byte as \\ddd."""
    out = []
    for b in value.encode("utf-8"):
        ch = chr(b)
        out.append(ch if 32 <= b < 127 and ch not in '"\\' else f"\\{b:03d}")
    return '"' + "".join(out) + '"'


def lua_script(spec: LoadSpec, out_json: Path, threads: int = 1) -> str:
    s = spec.scenario
    lines = [f"OUT = {lua_string(str(out_json))}",
             "PCTS = {" + ", ".join(str(p) for p in PERCENTILES.values()) + "}",
             f"CONNECTIONS = {spec.concurrency}",
             f"wrk.method = {lua_string(s.method)}"]
    if s.body is not None:
        lines.append(f"wrk.body = {lua_string(s.body.decode())}")
    for k, v in s.headers.items():
        lines.append(f"wrk.headers[{lua_string(k)}] = {lua_string(v)}")
    if s.ids:
        i = s.ids
        lines.append(f"PREFIX, HOT, EVERY, FIRST, LENGTH = {lua_string(i.prefix)}, {i.hot}, {i.every}, {i.first}, "
                     f"{i.length}")
        lines.append(f"THREADS = {threads}")
    return "\n".join(lines) + "\n" + (_IDS if s.ids else "") + _DONE


def parse_summary(doc: dict, loadgen_cpu_s: float) -> LoadResult:
    """The JSON written by done() -> LoadResult (microseconds become milliseconds); latencies raw,
    wrk's own corrected mean and p99 apart."""
    def ms(key):
        v = doc.get(key)
        return float("nan") if v is None else v / 1000.0
    return LoadResult(
        requests=doc["requests"], duration_s=doc["duration_us"] / 1e6, bytes=doc["bytes"],
        errors_connect=doc["connect"], errors_read=doc["read"], errors_write=doc["write"],
        errors_timeout=doc["timeout"], errors_status=doc["status"],
        latency_min=ms("min"), latency_mean=ms("mean"), latency_stdev=ms("stdev"),
        latency_max=ms("max"), loadgen_cpu_s=loadgen_cpu_s,
        co_corrected_mean=ms("co_mean"), co_corrected_p99=ms("co_p99"),
        **{f"latency_{k}": ms(percentile_label(k)) for k, p in PERCENTILES.items()})


class WrkDriver(Driver):
    name = "wrk"

    def run(self, spec: LoadSpec) -> LoadResult:
        self.can_send(spec)
        wrk = self.executable()
        script, out_json, log = self.files(spec, "lua", "json", "log")
        threads = max(1, min(cpu_count(spec.cpus), spec.concurrency))
        script.write_text(lua_script(spec, out_json, threads))
        duration = max(1, math.ceil(spec.duration_s))
        argv = [wrk, f"-t{threads}", f"-c{spec.concurrency}", f"-d{duration}s",
                f"--timeout={math.ceil(spec.timeout_s)}s", "-s", str(script), spec.url]
        # wrk's window opens a few milliseconds after it starts (parsing, connecting) and lasts duration_us
        started = time.time()
        rc, wall_s, cpu_s = run_generator(argv, log, deadline_s=duration + spec.timeout_s + 30, cpus=spec.cpus)
        if rc != 0 or not out_json.exists():
            raise DriverFailed(f"wrk exited with {rc}: {log_tail(log, 5) or 'no output'}")
        try:
            result = parse_summary(json.loads(out_json.read_text()), cpu_s)
        except (ValueError, KeyError) as e:
            raise DriverFailed(f"wrk wrote an unreadable summary ({e}): {out_json}") from None
        result.started_at, result.loadgen_wall_s = started, wall_s
        return result
