"""Where the server, the load generator and the data services run, and the links between them.

The default is one host: everything on this machine's loopback. A topology file places the server
and the data services (Redis, MariaDB) on hosts of their own; on one machine a host is a Linux
network namespace the run creates (`bench-<pid>-<host>`), joined to the others by veth pairs with
addresses from 198.18.0.0/15 (RFC 2544's range for benchmark networks) and no route beyond them.
The load generator and the orchestrator stay on this machine's own stack, the host called "local".

A plain link is a veth pair. A link that carries a round-trip time, jitter, loss or a rate limit is a
wire (wire/delay_wire.c): a TUN device at each end and a small process between them that holds each
packet for half the round trip, each way. tc netem would be the usual tool, but the kernels of this
machine kind are built without it (and without fq): "Specified qdisc kind is unknown". One link may
list several round-trip times: each is a level at which every cell is measured, the wire reshaped in
place between levels (the far-database experiment). The round trip each level really has is probed,
not assumed (`measure_rtt`).
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
from dataclasses import asdict, dataclass, field
from pathlib import Path

from orchestrator.infra import round_trip
from orchestrator.measure import sampling
from orchestrator.config.documents import Document
from orchestrator.errors import BenchError, UsageError
from orchestrator.targets.jvm import parse_cpus
from orchestrator.infra.procs import log_tail, require_tool, spawn, stop
from orchestrator.targets.runtimes import Server
from orchestrator.infra.tools import compiled

LOCAL = "local"
RANGE = ipaddress.ip_network("198.18.0.0/15")
NETNS_DIR = Path("/run/netns")
PREFIX = "bench-"
HOST_NAME = re.compile(r"[a-z][a-z0-9]{0,11}")


@dataclass(frozen=True)
class Shape:
    """What a link does to its packets, each way: half the round trip, jitter, loss, a rate."""
    rtt_ms: float = 0.0
    jitter_ms: float = 0.0
    loss_pct: float = 0.0
    rate: str = ""            # tc's units: 100mbit, 1gbit; empty: no limit

    @property
    def plain(self) -> bool:
        return not (self.rtt_ms or self.jitter_ms or self.loss_pct or self.rate)

    def wire_line(self) -> str:
        """delay_wire's shape file: one-way delay and jitter in us, loss in ppm, rate in bit/s."""
        units = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
        m = re.fullmatch(r"(\d+(?:\.\d+)?)(kbit|mbit|gbit)", self.rate)
        rate = int(float(m.group(1)) * units[m.group(2)]) if m else 0
        return (f"{round(self.rtt_ms * 500)} {round(self.jitter_ms * 1000)} "
                f"{round(self.loss_pct * 10000)} {rate}\n")

    def label(self) -> str:
        parts = [f"rtt {self.rtt_ms:g} ms"] + ([f"jitter {self.jitter_ms:g} ms"] if self.jitter_ms else []) \
            + ([f"loss {self.loss_pct:g} %"] if self.loss_pct else []) + ([f"rate {self.rate}"] if self.rate else [])
        return ", ".join(parts)


@dataclass(frozen=True)
class Link:
    a: str
    b: str
    shapes: tuple[Shape, ...] = (Shape(),)   # more than one: the levels of the run

    @property
    def name(self) -> str:
        return f"{self.a}-{self.b}"


@dataclass(frozen=True)
class Topology:
    """Which host each role runs on, and the links between the hosts."""
    name: str = "single-host"
    server: str = LOCAL
    data: str = LOCAL
    links: tuple[Link, ...] = ()
    description: str = ""
    workers: str = LOCAL      # where a ramp's Locust workers run (their master stays local)

    @property
    def single_host(self) -> bool:
        return self.server == LOCAL and self.data == LOCAL and self.workers == LOCAL

    @property
    def hosts(self) -> list[str]:
        """The namespaces this topology needs, in a fixed order."""
        return [h for h in dict.fromkeys([self.server, self.data, self.workers]) if h != LOCAL]

    def pairs(self) -> list[tuple[str, str]]:
        """Every pair of hosts that talk: the load to the server, the orchestrator to the data
        services (seeding, counters), the server to the data services, and Locust's master to its
        workers and they to the server."""
        wanted = [(LOCAL, self.server), (LOCAL, self.data), (self.server, self.data),
                  (LOCAL, self.workers), (self.workers, self.server)]
        return list(dict.fromkeys((a, b) for a, b in wanted if a != b))

    def link(self, a: str, b: str) -> Link:
        for link in self.links:
            if {link.a, link.b} == {a, b}:
                return link
        # an unshaped link, named in the order pairs() gives (its ends are keyed so)
        return Link(*next((p for p in self.pairs() if set(p) == {a, b}), (a, b)))

    @property
    def varying(self) -> Link | None:
        return next((link for link in self.links if len(link.shapes) > 1), None)

    @property
    def subject(self) -> Link | None:
        """The link a row's network_rtt_ms is of: the varying one, else the first one shaped."""
        return self.varying or next((link for link in self.links if not link.shapes[0].plain), None)

    def levels(self) -> list[str | None]:
        """The network level of each pass over the cells: the varying link's shapes, or [None]
        (one pass; rows then read the network from run.json)."""
        v = self.varying
        return [f"{v.name} {s.label()}" for s in v.shapes] if v else [None]

    def shapes_at(self, level: str | None) -> dict[str, Shape]:
        """The shape of every link at a level."""
        out = {}
        for a, b in self.pairs():
            link = self.link(a, b)
            shape = link.shapes[0]
            if level is not None and len(link.shapes) > 1:
                shape = next(s for s in link.shapes if f"{link.name} {s.label()}" == level)
            out[link.name] = shape
        return out

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict | None) -> "Topology":
        if not d:
            return cls()
        links = tuple(Link(x["a"], x["b"], tuple(Shape(**s) for s in x["shapes"])) for x in d.get("links", ()))
        return cls(name=d["name"], server=d["server"], data=d["data"], links=links,
                   description=d.get("description", ""), workers=d.get("workers", LOCAL))


def parse(path: Path) -> Topology:
    """A topology file, every mistake a one-line error naming the field."""
    return from_document(Document.read(path), path.stem)


def from_document(doc: Document, name: str) -> Topology:
    """A topology's table (a file's, or a preset's [topology])."""
    path = doc.path
    doc.check_keys(("description", "server", "data", "workers", "links"))
    server, data = doc.get("server", str, LOCAL), doc.get("data", str, LOCAL)
    workers = doc.get("workers", str, LOCAL)
    for role, host in (("server", server), ("data", data), ("workers", workers)):
        if host != LOCAL and not HOST_NAME.fullmatch(host):
            doc.fail(role, f"'{host}': a host is '{LOCAL}' or a name of 1-12 lower-case letters and digits")
    if server != LOCAL and data == LOCAL:
        # the server would then reach the data services at this machine's own end of a link
        doc.fail("data", "the data services stay on the local host while the server has its own: "
                         "give data a host too (e.g. data = \"db\")")
    topo = Topology(name=name, server=server, data=data, description=doc.get("description", str, ""),
                    workers=workers)
    links = []
    for i, raw in enumerate(doc.get("links", list, [], nonempty=False)):
        link = Document(path, raw if isinstance(raw, dict) else {}, f"{doc.prefix}links[{i}].")
        link.check_keys(("between", "rtt", "jitter", "loss", "rate"))
        between = link.str_list("between")
        pair = next((p for p in topo.pairs() if set(p) == set(between)), None) if len(between) == 2 else None
        if pair is None:
            link.fail("between", f"{list(between)} is not a link of this topology; it links "
                                 f"{', '.join('-'.join(p) for p in topo.pairs()) or 'nothing (one host)'}")
        rtts = link.table.get("rtt", "0ms")
        rtts = rtts if isinstance(rtts, list) and rtts else [rtts]
        rtt_ms = [Document(path, {"rtt": r}, link.prefix).duration("rtt", "0ms", allow_zero=True) * 1000
                  for r in rtts]
        jitter_ms = link.duration("jitter", "0ms", allow_zero=True) * 1000
        loss = link.table.get("loss", 0)
        if not isinstance(loss, (int, float)) or isinstance(loss, bool) or not 0 <= loss < 100:
            link.fail("loss", f"must be a percentage from 0 to below 100 (0.5 is 0.5 %); got {loss!r}")
        rate = link.get("rate", str, "", nonempty=False)
        if rate and not re.fullmatch(r"\d+(\.\d+)?(kbit|mbit|gbit)", rate):
            link.fail("rate", f"'{rate}' must look like 100mbit or 1gbit")
        links.append(Link(*pair, tuple(Shape(r, jitter_ms, float(loss), rate) for r in rtt_ms)))
    if sum(len(link.shapes) > 1 for link in links) > 1:
        doc.fail("links", "only one link may list several round-trip times (each is a level of the run)")
    return Topology(name=topo.name, server=server, data=data, links=tuple(links), description=topo.description,
                    workers=workers)


SHIPPED_DIR = Path(__file__).resolve().parent / "topologies"


def load(value: str) -> Topology:
    """--topology: a shipped topology's name or a file."""
    path = SHIPPED_DIR / f"{value}.toml"
    if not path.exists():
        path = Path(value)
    if not path.is_file():
        shipped = ", ".join(sorted(p.stem for p in SHIPPED_DIR.glob("*.toml")))
        raise UsageError(f"--topology '{value}' is neither a file nor a shipped topology ({shipped})")
    return parse(path)


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


WIRE_SOURCE = Path(__file__).resolve().parent.parent / "infra" / "wire" / "delay_wire.c"


def wire_binary() -> Path:
    """delay_wire compiled with the system's C compiler, once per source."""
    cc = require_tool("cc", "apt-get install gcc")
    return compiled("delay_wire", WIRE_SOURCE, [cc, "-O2", "-Wall", "-o", "{out}", str(WIRE_SOURCE)])


@dataclass
class Wire:
    """A running delay_wire: its process, the file it reads its shape from, its log."""
    process: subprocess.Popen
    shape_file: Path
    log: Path

    def reshape(self, shape: Shape) -> None:
        """Write the new shape and wait until the wire has read it (it logs each shape it reads)."""
        before = self.log.read_text().count("delay_wire: delay")
        self.shape_file.write_text(shape.wire_line())
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
            (self.work_dir / "owner").write_text(str(self.owner))
        shape_file, log = self.work_dir / f"{link.name}.shape", self.work_dir / f"{link.name}.log"
        shape_file.write_text(link.shapes[0].wire_line())
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

    def shape(self, level: str | None, server: Server | None = None) -> None:
        """Every wire as the level wants it, then every link's round trip probed once the server (if
        one runs) and the CPUs of the wires and the probes are quiet (the wait is kept with them)."""
        if self.probes and self.level == level:
            return
        for name, shape in self.topology.shapes_at(level).items():
            if name in self.wires:
                self.wires[name].reshape(shape)
        self.level = level
        at = time.strftime("%Y-%m-%dT%H:%M:%S")
        settled = sampling.settle(server, parse_cpus(self.cpus) if self.cpus else os.sched_getaffinity(0))
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
    import psutil
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

