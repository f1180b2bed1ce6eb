"""Where the server, the load generator and the data services run, and the links between them: the
topology files (topologies/*.toml, a preset's [topology]) read into plain values.

The default is one host: everything on this machine's loopback. A topology file places the server
and the data services (Redis, MariaDB) on hosts of their own; the load generator and the orchestrator
stay on this machine's own stack, the host called "local". A link may carry a round-trip time,
jitter, loss or a rate limit; one link may list several round-trip times, each a level at which every
cell is measured (the far-database experiment).

Only the description lives here, so that a report reads a run's topology without anything that
starts processes; infra/network.py builds it on this machine (namespaces, links, delay wires).
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path

from orchestrator.config.documents import Document
from orchestrator.errors import UsageError

LOCAL = "local"
HOST_NAME = re.compile(r"[a-z][a-z0-9]{0,11}")
RATE = re.compile(r"(\d+(?:\.\d+)?)(kbit|mbit|gbit)")   # a link's rate: its figure and unit


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
        if rate and not RATE.fullmatch(rate):
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
