"""`bench calibrate`: each load generator's ceiling on this machine, measured against nginx.

A target's figure close to what its generator can send at all says more about the generator than
about the target. nginx answering a fixed body from memory is faster than any JVM target here, so
the best a generator reaches against it is (close to) its own ceiling. When nginx itself is near
the limit of its CPUs, the figure is only a lower bound of that ceiling: the record says which side
was the limit ("bound": "server", "generator", or "neither" when other work on the machine was).

A generator that runs open-model (arrival-rate) loads has a second, lower ceiling: the highest rate
it keeps against nginx with no arrival dropped and p99 within OPEN_P99_MS (pacer: and its own send lag
within OPEN_LAG_MS, both over what this host's timer makes it lag at a rate where it idles), found by
the same search as a capacity cell (capacity.py). Above it, a capacity probe measures the generator: k6 on one CPU
drops arrivals there while nginx idles, at a quarter of its closed-loop ceiling.

Every registered driver is a generator here (config/driver_registry.py), oha too, which runs no profile.
The figures go to the calibration store (measure/ceilings.py), which runs read; nginx is
infra/nginx.py's.
"""
from __future__ import annotations

import datetime as dt
import functools
import shutil
import statistics
import tempfile
from pathlib import Path

import psutil
from rich.markup import escape
from rich.table import Table

from orchestrator.config import kinds, options
from orchestrator.config import mix as mix_mod
from orchestrator.config.driver_registry import drivers_by_kind, get, info, names
from orchestrator.config.kinds.capacity_search import FAIL, LIMIT, PASS, Search, Verdict, judge, vus_for
from orchestrator.config.load import LoadResult, LoadSpec
from orchestrator.config.objective import Objective
from orchestrator.config.scenarios import HELLO, Scenario, parse_list
from orchestrator.core.cpus import cpu_count, parse_cpus, settle, steal_since
from orchestrator.core.schema import HOST_STEAL
from orchestrator.drivers.base import DriverFailed
from orchestrator.errors import BenchError, UsageError
from orchestrator.infra import downstream, nginx, procs
from orchestrator.infra.backends import OWNER_FILE
from orchestrator.infra.hostinfo import host_info, tool_version
from orchestrator.infra.interrupts import quiet_sigterm
from orchestrator.measure import downstream_ceiling
from orchestrator.measure.ceilings import entries, store
from orchestrator.measure.checks import busy_processes
from orchestrator.results.store import machine_key

BUSY = 0.9                 # a side above this share of the CPUs it can use set the pace
LEVELS = (16, 64, 256)     # connections (VUs, users) tried; the ceiling is the best of them
WINDOWS = 3                # windows per level; a level's figure is their median
# The open-model ceiling's test: what the generator alone may add to p99 (nginx answers in ~0.1 ms)
# and drop, at VUs sized as a capacity probe at the default objective would have them.
OPEN_P99_MS = 5.0
# ... and what it may lag behind its own schedule (pacer says): at p99, an arrival sent this late with a
# connection idle. This machine's timer wakes a sleeper 0.1-0.5 ms late at p99 when the host is calm.
OPEN_LAG_MS = 1.0
# Both over the host's own timer: pacer's lag p99 at a rate where it idles between arrivals. A host
# that steals the vCPUs wakes every sleeper late (2026-11-29: pacer's lag p99 1.6-2.4 ms at 125-250/s
# and 2.9-3.1 ms at 2,000/s, nginx idle), and a test blind to it read a ceiling of 148/s, which then
# capped every capacity search at it although pacer kept 2,000/s no later than 125/s.
OPEN_FLOOR_RATE = 250
OPEN = Objective(percentile="p99", bound_ms=OPEN_P99_MS, error_budget=0.0)
OPEN_START, OPEN_RESOLUTION, OPEN_PROBES, OPEN_MAX_VUS = 2000, 0.05, 16, 2000
OPEN_WINDOW_S = 5.0   # a run's own calibration: its probes' length, up to this
# A probe failed while the host stole over HOST_STEAL of the CPUs is probed again up to this often before
# it counts: 2026-11-29, failures at 12-35 % steal set one path's ceiling at 2,438/s, the mix's minutes
# later 37,000 (each probe starts on a calm host, but it steals in bursts shorter than a window).
STOLEN_RETRIES = 2
SCENARIO = Scenario("calibrate", "GET", nginx.PATHS[0], 200, "text/plain", HELLO)
# A mix of nginx's two paths, half each: what a generator that sends mixes keeps on one (a workload's
# capacity search offers it a mix) beside what it keeps on a single path
MIX = mix_mod.mix("plaintext+json", {"calibrate": 1, "calibrate-json": 1},
                  {"calibrate": SCENARIO, "calibrate-json": Scenario("calibrate-json", "GET", nginx.PATHS[1], 200,
                                                                     "application/json", {"message": HELLO})})


def _spec(name: str, concurrency: int, duration_s: float, cpus: str, port: int, out: Path,
          requests: int) -> LoadSpec | None:
    """A closed loop at `concurrency`, in the shape of the first kind the driver runs (its registry
    entry's, in KINDS' order) that has one: a timed loop, else a burst of `requests` (h2load) or one
    ramp step as long (Locust); None for a driver that runs arrival rates only."""
    common = dict(port=port, scenario=SCENARIO, concurrency=concurrency, duration_s=duration_s, cpus=cpus,
                  timeout_s=10.0, out_dir=out)
    runs = set(info(name).kinds)
    probes = (kind.closed_loop_probe(common, requests) for kind_name, kind in kinds.KINDS.items() if kind_name in runs)
    return next((spec for spec in probes if spec is not None), None)


def measure(name: str, servers: list[psutil.Process], port: int, server_cpus: str, loadgen_cpus: str,
            duration_s: float, work: Path, rps_guess: float) -> dict:
    """WINDOWS windows at each of LEVELS; the ceiling is the level with the best median rps."""
    gen = get(name)
    # A Locust process without workers is one Python thread: one core is all it can use.
    usable = 1 if name == "locust" else cpu_count(loadgen_cpus)
    levels = []
    for concurrency in LEVELS:
        windows = []
        for _ in range(WINDOWS):
            # h2load sends a fixed number of requests: size each burst to last about one window.
            spec = _spec(name, concurrency, duration_s, loadgen_cpus, port, work / name, int(rps_guess * duration_s))
            before = nginx.cpu_s(servers)
            r = gen.run(spec)
            server_s = nginx.cpu_s(servers) - before   # nginx idles while the generator starts and stops
            window = r.steps[0] if r.steps else r   # Locust: the step, not its start-up
            windows.append({"rps": r.rps, "errors": r.errors + r.errors_status,
                            "gen": 100 * window.loadgen_cpus_used / usable,
                            "server": 100 * server_s / r.duration_s / len(servers)})
            rps_guess = r.rps or rps_guess
        levels.append({"concurrency": concurrency, "rps": [round(w["rps"]) for w in windows],
                       "median_rps": round(statistics.median(w["rps"] for w in windows)),
                       "generator_cpu_pct": round(statistics.median(w["gen"] for w in windows), 1),
                       "server_cpu_pct": round(statistics.median(w["server"] for w in windows), 1),
                       "errors": sum(w["errors"] for w in windows)})
    best = max(levels, key=lambda lv: lv["median_rps"])
    return {"ceiling_rps": best["median_rps"], "concurrency": best["concurrency"],
            "generator_cpu_pct": best["generator_cpu_pct"], "server_cpu_pct": best["server_cpu_pct"],
            "bound": bound(best["server_cpu_pct"], best["generator_cpu_pct"]),
            "levels": levels}


def open_model(name: str, servers: list[psutil.Process], port: int, loadgen_cpus: str, work: Path,
               window_s: float, say, resolution: float = OPEN_RESOLUTION, needed: float | None = None,
               scenario: Scenario = SCENARIO) -> dict:
    """The highest arrival rate the generator keeps against nginx (OPEN's test, over the host's timer
    floor), by a capacity search: nginx is far from its limit, so a failure is the generator's or the
    machine's. Each probe starts once the CPUs are quiet; a failure the host stole from is probed again
    (STOLEN_RETRIES), and a failed rate once more (best of two): a spoiled window would cap every capacity
    search (a CI run read 484/s where this machine keeps 2,875-4,875/s). needed: the most a run's search
    can offer; the search stops once the generator kept it (`open_capped_at`: at least that)."""
    gen, probes = get(name), []
    search = Search(OPEN_START, resolution, OPEN_PROBES, max_rate=needed, retry_failures=True)
    quiet = parse_cpus(loadgen_cpus) | {c for s in servers for c in s.cpu_affinity()}
    window = functools.partial(_open_window, gen, name, servers, port, loadgen_cpus, work, window_s, scenario, quiet)
    floor = window(OPEN_FLOOR_RATE)[0].send_lag_p99
    floor = 0.0 if floor != floor else round(floor, 2)   # a generator that does not say its lag
    if floor:
        say(f"[dim]  {name} at {OPEN_FLOOR_RATE}/s, idle between arrivals: its lag p99 {floor:g} ms is this host's "
            f"timer, which each probe's test allows on top[/]")
    test, lag_bound = Objective("p99", OPEN_P99_MS + floor, 0.0), OPEN_LAG_MS + floor
    while (rate := search.next_rate()) is not None:
        for attempt in range(STOLEN_RETRIES + 1):
            r, probe = window(rate)
            verdict = _open_verdict(rate, r, test, lag_bound, scenario)
            again = verdict.state == FAIL and _stolen(probe) > 0 and attempt < STOLEN_RETRIES
            probes.append({**probe, "verdict": f"{verdict.state}: {verdict.why}" + ("; probed again" if again else "")})
            say(_open_probe_line(name, rate, verdict, probe, scenario, again))
            if not again:
                break
        search.record(rate, verdict)
    lagged = any(p["send_lag_p99_ms"] is not None for p in probes)
    lag = f", send lag p99 <= {OPEN_LAG_MS:g} ms" if lagged else ""
    over = f", each over the host's timer: pacer's lag p99 {floor:g} ms at {OPEN_FLOOR_RATE}/s" if lagged else ""
    capped = needed if needed and search.limit == needed and search.low >= needed else None
    return {"open_ceiling_rps": round(search.low), "open_outcome": search.outcome(), "open_capped_at": capped,
            "open_test": OPEN.describe(scenario) + lag + over, "open_timer_floor_ms": floor,
            "open_window_s": window_s, "open_resolution": resolution, "open_probes": probes}


def _open_verdict(rate: float, r: LoadResult, test: Objective, lag_bound: float, scenario: Scenario) -> Verdict:
    """A probe's verdict: OPEN's test over the host's timer, and the generator's own send lag within bound."""
    verdict = judge(rate, r, [], test, scenario, None)
    if verdict.state == LIMIT:   # against nginx every failure is the generator's: probed again as one
        return Verdict(FAIL, verdict.why)
    if verdict.state == PASS and r.send_lag_p99 > lag_bound:
        return Verdict(FAIL, f"sent {r.late_sends:,} arrivals late, send lag p99 {r.send_lag_p99:.2f} ms > {lag_bound:g} ms")
    return verdict


def _stolen(probe: dict) -> float:
    """The % of the CPUs the host stole during a probe when above HOST_STEAL, else 0."""
    pct = probe["steal_pct"] or 0
    return pct if pct > 100 * HOST_STEAL else 0


def _open_probe_line(name: str, rate: float, verdict: Verdict, probe: dict, scenario: Scenario, again: bool) -> str:
    waited = f", after {probe['settled_s']:g} s waiting for quiet CPUs" if probe["settled_s"] > 1 else ""
    # a host that steals the vCPUs makes pacer late on time of its own: the reader sees why
    stole = f", the host stole {_stolen(probe):.0f} % of the CPUs" if _stolen(probe) else ""
    stole += ": probed again" if again else ""
    on = "" if scenario is SCENARIO else f" on {scenario.name}"
    return f"[dim]  {name} open model{on} at {rate:,.0f}/s: {verdict.state} ({escape(verdict.why)}{waited}{stole})[/]"


def _open_window(gen, name: str, servers: list[psutil.Process], port: int, loadgen_cpus: str, work: Path,
                 window_s: float, scenario: Scenario, quiet: set[int], rate: float) -> tuple[LoadResult, dict]:
    """One window at `rate` arrivals a second, once the CPUs are quiet: its result and its figures."""
    settled_s = settle(None, quiet)
    vus = vus_for(rate, Objective(), scenario, OPEN_MAX_VUS)
    spec = LoadSpec(port=port, scenario=scenario, concurrency=vus, duration_s=window_s, rate=rate,
                    cpus=loadgen_cpus, timeout_s=10.0, out_dir=work / f"{name}-open-{scenario.name}")
    before, (stolen, _) = nginx.cpu_s(servers), steal_since(quiet)
    r = gen.run(spec)
    server_pct = 100 * (nginx.cpu_s(servers) - before) / r.duration_s / len(servers)
    steal_pct = steal_since(quiet, stolen)[1]
    return r, {"rate": rate, "vus": vus, "rps": round(r.rps), "dropped": r.dropped, "late_sends": r.late_sends,
               "send_lag_p99_ms": None if r.send_lag_p99 != r.send_lag_p99 else round(r.send_lag_p99, 2),
               "p50_ms": round(r.latency_p50, 2), "p99_ms": round(r.latency_p99, 2),
               "generator_cpu_pct": round(100 * r.loadgen_cpus_used / cpu_count(loadgen_cpus), 1),
               "server_cpu_pct": round(server_pct, 1), "settled_s": settled_s,
               "steal_pct": None if steal_pct is None else round(steal_pct, 1)}


def ensure_open_ceiling(name: str, server_cpus: str, loadgen_cpus: str, port: int, results_dir: Path,
                        window_s: float, resolution: float, say, needed: float | None = None) -> float:
    """The generator's open-model ceiling with it on loadgen_cpus, measured now if this machine has
    none: a capacity search above it would measure the generator. Its probes are as long as the
    search's (window_s, at most OPEN_WINDOW_S), and it is resolved as finely as the search is
    (resolution, at least OPEN_RESOLUTION): what k6 keeps for 2 s is the cap of 2-s probes, a cap
    finer than the search reads nothing more, and each probe costs its window and a pause (14
    probes of 2 s took 60 s here, the 7 of a 50-% search about 30 s). A coarser cap is a lower
    one: kept for later runs, it can only make their generator limit more cautious.

    needed: the most the run's search can offer. The measuring stops once the generator kept it
    (pacer keeps 80,000/s here, which a quick search that can reach 8,000 need not wait for), and a
    later run that may offer more measures again."""
    known = enough(entries(results_dir, loadgen_cpus).get(name, {}), needed)
    if known:
        return known
    procs.ensure_port_free(port, "nginx")
    say(f"{name}'s open-model ceiling is not calibrated with it on CPU(s) {loadgen_cpus}: measuring it against "
        f"nginx first (`bench calibrate` measures every generator)")
    work = Path(tempfile.mkdtemp(prefix="bench-calibrate-"))
    (work / OWNER_FILE).write_text(procs.Owner.me().mark())
    try:
        with quiet_sigterm(), nginx.serving(port, server_cpus, work) as servers:
            entry = open_model(name, servers, port, loadgen_cpus, work, min(window_s, OPEN_WINDOW_S), say,
                               max(resolution, OPEN_RESOLUTION), needed)
    except DriverFailed as e:
        raise BenchError(f"could not measure {name}'s open-model ceiling: {e}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if not entry["open_ceiling_rps"]:
        raise BenchError(f"{name} kept no arrival rate against nginx ({entry['open_test']}; "
                         f"{entry['open_outcome']}): a capacity search here would measure {name}")
    entry.update({"open_measured_at": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
                  "server_cpus": server_cpus, "loadgen_cpus": loadgen_cpus})
    store(results_dir, host_info(), {name: entry}, merge=True)
    say(_open_line(name, entry))
    return entry["open_ceiling_rps"]


def enough(entry: dict, needed: float | None) -> float | None:
    """The stored open-model ceiling if it serves a search that may offer up to `needed` (None: any
    rate): one measured only up to a cap (`open_capped_at`) serves searches below that cap."""
    capped = entry.get("open_capped_at")
    if entry.get("open_ceiling_rps") and not (capped and (not needed or needed > capped)):
        return entry["open_ceiling_rps"]
    return None


def _open_line(name: str, entry: dict) -> str:
    return f"{name}: open model {entry['open_ceiling_rps']:,} req/s ({entry['open_test']}, {entry['open_outcome']})"


def bound(server_pct: float, generator_pct: float) -> str:
    """Which side limited the figure: "server" (then it is only a lower bound of the generator's
    ceiling), "generator", or "neither" (both had CPU to spare: other work on the machine took it,
    and the figure says little)."""
    if server_pct >= 100 * BUSY:
        return "server"
    return "generator" if generator_pct >= 100 * BUSY else "neither"


def closed_loop(name: str) -> bool:
    """Whether the generator runs a closed loop (a timed one, a burst or a ramp step), whose ceiling
    `measure` finds; one that runs arrival rates only (pacer) has its open-model ceiling alone."""
    return not info(name).kinds or _spec(name, 1, 1.0, "0", 0, Path("."), 1) is not None


def _chosen(generators: str | None, say) -> list[str]:
    """The generators to calibrate: those named (each must be installed), else every installed one.
    Asking for a generator builds one made on first use (k6, when Go is there) before anything starts:
    its ceilings are what the runs that drive it are flagged against."""
    named = parse_list(generators, list(names()), "generator")
    for name in named or []:
        get(name).executable()     # MissingTool (exit 2) before anything starts
    if named:
        return named
    found = []
    for name in names():
        try:
            get(name).executable()
            found.append(name)
        except BenchError as e:
            say(f"[dim]skipping {name}: {escape(str(e))}[/]")
    return found


def command(server_cpus: str | None, loadgen_cpus: str | None, duration: str, generators: str | None, port: int,
            results_dir: Path, console) -> bool:
    """`bench calibrate`: measure, store, print. False when a generator failed."""
    server_cpus = options.cpu_list(server_cpus or "1", "--server-cpus")
    loadgen_cpus = options.cpu_list(loadgen_cpus or "0", "--loadgen-cpus")
    duration_s = options.duration(duration, "--duration")
    options.port(port, "--port")
    procs.ensure_port_free(port, "nginx")
    nginx_exe = nginx.executable()
    names = _chosen(generators, console.print)
    if not names:
        raise UsageError(f"no load generator is installed ({', '.join(names())})")
    host = host_info()
    busy = busy_processes()
    for b in busy:
        console.print(f"[yellow]warning: busy:[/] {escape(b)}", soft_wrap=True)
    common = {"server": tool_version(nginx_exe, "nginx"), "server_cpus": server_cpus, "loadgen_cpus": loadgen_cpus,
              "window_s": duration_s, "windows": WINDOWS, "busy_at_start": busy}
    console.print(f"calibrating {', '.join(names)} against {common['server']} on CPU(s) {server_cpus}, generators "
                  f"on CPU(s) {loadgen_cpus}: {WINDOWS} x {duration_s:g} s at {', '.join(map(str, LEVELS))} "
                  f"connections each")
    entries: dict[str, dict] = {}
    work = Path(tempfile.mkdtemp(prefix="bench-calibrate-"))
    (work / OWNER_FILE).write_text(procs.Owner.me().mark())   # `bench clean` removes it if this process is killed
    try:
        with quiet_sigterm(), nginx.serving(port, server_cpus, work) as servers:
            for name in names:
                guess = max((e.get("ceiling_rps", 0) for e in entries.values()), default=0) or 10_000
                entries[name] = _generator(name, servers, port, server_cpus, loadgen_cpus, duration_s, work, guess,
                                           common, console)
                path = store(results_dir, host, {name: entries[name]})   # each kept if a later one is interrupted
        if shutil.which("nginx") and downstream.ECHO_MODULE.exists():
            path = downstream_ceiling.measure_and_store(port + 1, server_cpus, loadgen_cpus, duration_s, results_dir,
                                                        host, console)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    console.print(_table(entries, host, server_cpus, loadgen_cpus))
    console.print(f"stored in {path}")
    return not any("error" in e for e in entries.values())


def _generator(name: str, servers, port: int, server_cpus: str, loadgen_cpus: str, duration_s: float, work: Path,
               guess: int, common: dict, console) -> dict:
    """One generator's entry: its closed-loop ceiling and its open-model one, as it can be driven, or its error."""
    entry = {"version": tool_version(get(name).executable(), name),
             "measured_at": dt.datetime.now().astimezone().isoformat(timespec="seconds"), **common}
    try:
        if closed_loop(name):
            entry.update(measure(name, servers, port, server_cpus, loadgen_cpus, duration_s, work, guess))
            console.print(f"{name}: {entry['ceiling_rps']:,} rps at {entry['concurrency']} connections "
                          f"(generator {entry['generator_cpu_pct']:.0f} % of its CPUs, nginx "
                          f"{entry['server_cpu_pct']:.0f} %), bound: {entry['bound']}")
        if name in drivers_by_kind().get("capacity", ()):
            entry.update(open_model(name, servers, port, loadgen_cpus, work, duration_s, console.print))
            console.print(_open_line(name, entry))
            if get(name).mixes:
                entry["open_mix"] = _on_a_mix(name, servers, port, loadgen_cpus, work, duration_s, console.print)
                console.print(_mix_line(name, entry))
    except DriverFailed as e:
        entry["error"] = str(e)
        console.print(f"[red]{name} failed:[/] {escape(str(e))}", soft_wrap=True)
    return entry


def _on_a_mix(name: str, servers, port: int, loadgen_cpus: str, work: Path, duration_s: float, say) -> dict:
    """The open-model ceiling on MIX: a mix costs pacer a draw and a part index per arrival, which should
    not lower what it keeps (the record's own size is the same)."""
    found = open_model(name, servers, port, loadgen_cpus, work, duration_s, say, scenario=MIX)
    return {"scenario": MIX.name, "ceiling_rps": found["open_ceiling_rps"], "outcome": found["open_outcome"],
            "probes": found["open_probes"]}


def _mix_line(name: str, entry: dict) -> str:
    """The mix's ceiling beside one path's, with the most the host stole in either search: the two are
    measured one after the other, and a host that steals during one makes the ratio the host's (one run
    here read 2,062/s on one path at 13-27 % stolen, 39,000/s on the mix at under 1 %)."""
    single, mixed = entry["open_ceiling_rps"], entry["open_mix"]["ceiling_rps"]
    share = f" ({mixed / single:.0%} of one path's)" if single else ""
    stole = [max((p["steal_pct"] or 0 for p in probes), default=0)
             for probes in (entry["open_probes"], entry["open_mix"]["probes"])]
    return (f"{name}: open model on a mix of {MIX.name} {mixed:,} req/s{share}, {entry['open_mix']['outcome']}; "
            f"the host stole up to {stole[0]:.0f} % of the CPUs in one path's search, {stole[1]:.0f} % in the mix's")


def _table(entries: dict[str, dict], host: dict, server_cpus: str, loadgen_cpus: str) -> Table:
    """The console's table of the generators' ceilings."""
    table = Table("generator", "version", "ceiling rps", "at conc.", "generator CPU %", "nginx CPU %", "bound",
                  "open-model rps",
                  title=f"{machine_key(host)}: nginx on CPU(s) {server_cpus}, generators on CPU(s) {loadgen_cpus}",
                  caption="CPU % of the CPUs each side can use; bound: which side was at its limit; open-model rps: "
                          f"the highest arrival rate kept with p99 <= {OPEN_P99_MS:g} ms, no arrival dropped and "
                          f"send lag p99 <= {OPEN_LAG_MS:g} ms (pacer; both over the host's timer, its lag at "
                          f"{OPEN_FLOOR_RATE}/s)")
    table.columns[1].max_width = 40
    for name, e in entries.items():
        if "error" in e:
            table.add_row(name, escape(e["version"]), "", "", "", "", "[red]failed[/]", "")
            continue
        if "ceiling_rps" not in e:   # an open model only
            table.add_row(name, escape(e["version"]), "", "", "", "", "", f"{e['open_ceiling_rps']:,}")
            continue
        table.add_row(name, escape(e["version"]), f"{e['ceiling_rps']:,}", str(e["concurrency"]),
                      f"{e['generator_cpu_pct']:.0f}", f"{e['server_cpu_pct']:.0f}",
                      {"server": "server: a lower bound", "neither": "[yellow]neither: machine busy?[/]"}.get(
                          e["bound"], e["bound"]),
                      f"{e['open_ceiling_rps']:,}" if "open_ceiling_rps" in e else "")
    return table
