"""A topology (config/topology.py) built on this machine, and every trace of it removed after.

On one machine a host is a Linux network namespace the run creates (`bench-<pid>-<host>`), joined to
the others by veth pairs with addresses from 198.18.0.0/15 (RFC 2544's range for benchmark networks)
and no route beyond them. A link that carries a round-trip time, jitter, loss or a rate limit is a
wire (wire/delay_wire.c): a TUN device at each end and a small process between them that holds each
packet for half the round trip, each way. tc netem would be the usual tool, but the kernels of this
machine kind are built without it (and without fq): "Specified qdisc kind is unknown". A link with
several round-trip times has its wire reshaped in place between levels, and the round trip each
level really has is probed, not assumed (`measure_rtt`).
"""
from __future__ import annotations

import ipaddress
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

from orchestrator.config.topology import LOCAL, RATE, Link, Shape, Topology
from orchestrator.core.cpus import parse_cpus
from orchestrator.errors import BenchError
from orchestrator.infra import round_trip
from orchestrator.infra.procs import Owner, log_tail, require_tool, spawn, stop
from orchestrator.infra.tools import compiled

RANGE = ipaddress.ip_network("198.18.0.0/15")
NETNS_DIR = Path("/run/netns")
PREFIX = "bench-"


def _ip(*args: str, netns: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    argv = ["ip", *(["-n", netns] if netns else []), *args]
    r = subprocess.run(argv, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise BenchError(f"`{' '.join(argv)}` failed: {r.stderr.strip()}")
    return r


def _used_subnets() -> set[ipaddress.IPv4Network]:
    """The /24s of 198.18.0.0/15 that this machine's own stack has addresses in (another run's links)."""
    out = _ip("-4", "-o", "addr", "show").stdout
    nets = set()
    for m in re.finditer(r"inet (\d+\.\d+\.\d+\.\d+)/", out):
        addr = ipaddress.ip_address(m.group(1))
        if addr in RANGE:
            nets.add(ipaddress.ip_network(f"{addr}/24", strict=False))
    return nets


@dataclass
class End:
    host: str
    device: str
    address: str


WIRE_SOURCE = Path(__file__).resolve().parent / "wire" / "delay_wire.c"


def wire_binary() -> Path:
    """delay_wire compiled with the system's C compiler, once per source."""
    cc = require_tool("cc", "apt-get install gcc")
    return compiled("delay_wire", WIRE_SOURCE, [cc, "-O2", "-Wall", "-o", "{out}", str(WIRE_SOURCE)])


def wire_line(shape: Shape) -> str:
    """delay_wire's shape file: one-way delay and jitter in us, loss in ppm, rate in bit/s."""
    units = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
    m = RATE.fullmatch(shape.rate)
    rate = int(float(m.group(1)) * units[m.group(2)]) if m else 0
    return (f"{round(shape.rtt_ms * 500)} {round(shape.jitter_ms * 1000)} "
            f"{round(shape.loss_pct * 10000)} {rate}\n")


@dataclass
class Wire:
    """A running delay_wire: its process, the file it reads its shape from, its log."""
    process: subprocess.Popen
    shape_file: Path
    log: Path

    def reshape(self, shape: Shape) -> None:
        """Write the new shape and wait until the wire has read it (it logs each shape it reads)."""
        before = self.log.read_text().count("delay_wire: delay")
        self.shape_file.write_text(wire_line(shape))
        self.process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 5
        while self.log.read_text().count("delay_wire: delay") <= before:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise BenchError(f"the link's wire did not take its new shape; its log:\n{self.log.read_text()[-500:]}")
            time.sleep(0.01)


@dataclass
class Network:
    """The hosts and links of a topology, built on this machine; `down` removes every trace."""
    topology: Topology
    owner: int
    namespaces: dict[str, str] = field(default_factory=dict)     # host -> namespace
    ends: dict[str, tuple[End, End]] = field(default_factory=dict)   # link name -> its two ends
    level: str | None = None
    probes: list[dict] = field(default_factory=list)   # each reshaping's round trips, as probed
    wires: dict[str, Wire] = field(default_factory=dict)           # link name -> its wire (shaped links)
    cpus: str | None = None          # where the wires run: the load generator's and data services' CPUs
    work_dir: Path | None = None     # the wires' shape files and logs

    def namespace(self, host: str) -> str | None:
        return self.namespaces.get(host)

    def address(self, host: str, seen_from: str) -> str:
        """The address `seen_from` reaches `host` at: loopback on the same host, else host's end of their link."""
        if host == seen_from:
            return "127.0.0.1"
        a, b = self.ends[self.topology.link(seen_from, host).name]
        return a.address if a.host == host else b.address

    def up(self) -> None:
        """Create the namespaces and links; on any failure, remove what was made."""
        try:
            self._build()
        except BaseException:
            self.down()
            raise

    def _build(self) -> None:
        for host in self.topology.hosts:
            ns = f"{PREFIX}{self.owner}-{host}"
            _ip("netns", "add", ns)
            self.namespaces[host] = ns
            _ip("link", "set", "lo", "up", netns=ns)
        used = _used_subnets()
        free = (n for n in RANGE.subnets(new_prefix=24) if n not in used and n.network_address.packed[2] != 0)
        for i, (a, b) in enumerate(self.topology.pairs(), start=1):
            net = next(free)
            hosts = list(net.hosts())
            link = self.topology.link(a, b)
            end_a = End(a, f"b{self.owner}x{i}a", str(hosts[0]))
            end_b = End(b, f"b{self.owner}x{i}b", str(hosts[1]))
            shaped = any(not s.plain for s in link.shapes)
            if not shaped:
                _ip("link", "add", end_a.device, "type", "veth", "peer", "name", end_b.device)
            for end, peer in ((end_a, end_b), (end_b, end_a)):
                ns = self.namespace(end.host)
                if shaped:
                    _ip("tuntap", "add", "dev", end.device, "mode", "tun", netns=ns)
                    _ip("addr", "add", end.address, "peer", peer.address, "dev", end.device, netns=ns)
                else:
                    if ns:
                        _ip("link", "set", end.device, "netns", ns)
                    _ip("addr", "add", f"{end.address}/24", "dev", end.device, netns=ns)
                _ip("link", "set", end.device, "up", netns=ns)
            self.ends[link.name] = (end_a, end_b)
            if shaped:
                self.wires[link.name] = self._wire(link, end_a, end_b)
        self._route_to_server()

    def _route_to_server(self) -> None:
        """The server binds one address (the contract's BIND_ADDRESS), its end of the load's link: a
        host that loads it over a link of its own (Locust's workers) reaches that address through it."""
        t = self.topology
        if t.server == LOCAL or t.workers in (LOCAL, t.server):
            return
        _ip("route", "add", f"{self.address(t.server, LOCAL)}/32", "via", self.address(t.server, t.workers),
            netns=self.namespace(t.workers))

    def _wire(self, link: Link, a: End, b: End) -> Wire:
        if self.work_dir is None:
            self.work_dir = Path(tempfile.mkdtemp(prefix=f"bench-wire-{self.owner}-"))
            (self.work_dir / "owner").write_text(Owner.me().mark())   # `bench clean` reads it (infra/cleanup.py)
        shape_file, log = self.work_dir / f"{link.name}.shape", self.work_dir / f"{link.name}.log"
        shape_file.write_text(wire_line(link.shapes[0]))
        path = lambda end: str(NETNS_DIR / self.namespaces[end.host]) if end.host != LOCAL else "-"  # noqa: E731
        process = spawn([str(wire_binary()), path(a), a.device, path(b), b.device, str(shape_file)],
                        log_path=log, cpus=self.cpus)
        wire = Wire(process, shape_file, log)
        deadline = time.monotonic() + 5
        while "delay_wire: delay" not in (log.read_text() if log.exists() else ""):
            if process.poll() is not None or time.monotonic() > deadline:
                raise BenchError(f"the wire of link {link.name} did not start; its log:\n{log_tail(log)}")
            time.sleep(0.01)
        return wire

    def shape(self, level: str | None, settle: Callable[[set[int]], float]) -> None:
        """Every wire as the level wants it, then every link's round trip probed once `settle` has
        waited for the CPUs of the wires and the probes to go quiet, and for whatever else the caller
        knows must be (the server, if one runs: measure/sampling.py's settle); the wait is kept with
        the probes."""
        if self.probes and self.level == level:
            return
        for name, shape in self.topology.shapes_at(level).items():
            if name in self.wires:
                self.wires[name].reshape(shape)
        self.level = level
        at = time.strftime("%Y-%m-%dT%H:%M:%S")
        settled = settle(parse_cpus(self.cpus) if self.cpus else os.sched_getaffinity(0))
        self.probes.append({"level": level, "at": at, "settled_s": settled, "rtt": self.measure_rtt()})

    def subject_rtt_ms(self) -> float | None:
        """The probed round trip of the topology's subject link at the current level."""
        link = self.topology.subject
        return self.probes[-1]["rtt"][link.name]["median_ms"] if link and self.probes else None

    def measure_rtt(self) -> dict[str, dict]:
        """Each link's round trip, probed from one end to a closed port of the other (round_trip.py)."""
        return {name: round_trip.probe(b.address, what=f"link {name}", netns=self.namespace(a.host), cpus=self.cpus)
                for name, (a, b) in self.ends.items()}

    def down(self) -> None:
        """Stop the wires, remove the namespaces (their processes must be gone) and the links' local ends."""
        for wire in self.wires.values():
            stop(wire.process, grace=5)
        self.wires.clear()
        if self.work_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)
        for pair in self.ends.values():
            for end in pair:
                if not self.namespace(end.host):
                    _ip("link", "del", end.device, check=False)
        for ns in self.namespaces.values():
            _ip("netns", "del", ns, check=False)
        self.namespaces.clear()   # the ends stay: describe() still names them

    def summary(self) -> str:
        """One line for the console: where each role runs and each link's round trip as last probed."""
        t, rtt = self.topology, self.probes[-1]["rtt"] if self.probes else {}
        links = ", ".join(f"{name} {probe['median_ms']:g} ms" for name, probe in rtt.items())
        workers = f", Locust workers on {t.workers}" if t.workers != LOCAL else ""
        return (f"topology {t.name}: server on {t.server} ({self.address(t.server, LOCAL)}), Redis and MariaDB "
                f"on {t.data} ({self.address(t.data, t.server)}){workers}; round trips probed: {links}")

    def describe(self) -> dict:
        """For run.json: the topology, each link's addresses, and the round trips probed per level."""
        return {"topology": self.topology.to_dict(),
                "links": {name: {"ends": [asdict(a), asdict(b)],
                                 "shapes": {str(lv): asdict(self.topology.shapes_at(lv)[name])
                                            for lv in self.topology.levels()}}
                          for name, (a, b) in self.ends.items()},
                "rtt_probes": self.probes}


def stale_namespaces() -> list[str]:
    """Remove the namespaces (and local link ends) of bench processes that are gone: what a killed
    run left. Processes still inside one are killed first."""
    if os.geteuid() != 0:
        return []   # only root makes them
    removed = []
    names = [p.name for p in NETNS_DIR.glob(f"{PREFIX}*")] if NETNS_DIR.exists() else []
    for ns in names:
        m = re.fullmatch(rf"{PREFIX}(\d+)-\w+", ns)
        if not m or psutil.pid_exists(int(m.group(1))):
            continue
        for pid in _ip("netns", "pids", ns, check=False).stdout.split():
            try:
                psutil.Process(int(pid)).kill()
            except psutil.Error:
                pass
        _ip("netns", "del", ns, check=False)
        removed.append(f"network namespace {ns}")
    for m in re.finditer(r"^\d+: (b(\d+)x\d+a)[@:]", _ip("-o", "link", "show", check=False).stdout, re.M):
        if not psutil.pid_exists(int(m.group(2))):
            _ip("link", "del", m.group(1), check=False)
            removed.append(f"link {m.group(1)}")
    return removed

