"""What a run measures: the targets with their scenarios, the load profile, and the settings that
are the same for every target (CPUs, heap, ports, pool limits). run.json stores the plan, so that
`bench run --resume` measures exactly the cells that are missing."""
from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field, fields, make_dataclass

from orchestrator.config import option_table
from orchestrator.config.catalog import Target, resolve
from orchestrator.config.mix import build, parts_of
from orchestrator.config.modes import DEFAULT_JVM, WARM
from orchestrator.config.profiles import Profile
from orchestrator.config.scenarios import SCENARIOS, Scenario
from orchestrator.config.topology import Topology
from orchestrator.errors import BenchError

# How targets are started and loaded, the same for every target of a run: a field for each setting of
# the option table (config/option_table.py: its default, and the option that gives it), and these, which
# no option sets as given
_UNOPTIONED = [
    # CONTRACT.md's limits on work in flight the options do not set, the same for every target unless a
    # variant's env says otherwise
    ("downstream_pool_size", int, 512),
    ("cache_ttl_s", int, 10),
    # Where the server and the data services run and the links between them (topology.py's
    # Topology.to_dict(), from --topology or the preset); None: everything on this machine's loopback
    ("topology", "dict | None", None),
    # How each target's JVM starts (modes.JVM_MODES) and meets its load (modes.STARTS), from --jvm-mode and
    # --start: the matrix holds each target once per pair (modes.with_modes); "aot-cache" also logs every
    # JVM's class loading, in both modes alike, so that each row says how many classes came from a cache
    ("jvm_modes", "tuple[str, ...]", (DEFAULT_JVM,)),
    ("starts", "tuple[str, ...]", (WARM,)),
    # "ADDRESS:PORT" of this machine that a ramp's Locust workers on other machines (`bench
    # locust-worker`) connect to, from --locust-master; None: the workers, if any, start here or on the
    # topology's host
    ("locust_master", "str | None", None),
]
Settings = make_dataclass("Settings", [(name, kind, field(default=default)) for name, kind, default in
                                       (*option_table.settings_fields(), *_UNOPTIONED)],
                          namespace={"__doc__": "How targets are started and loaded; the same for every target of "
                                                "a run (each field an option's setting, or one of _UNOPTIONED)."})
Settings.__module__ = __name__


def pool_env(s: Settings, target: Target) -> dict[str, str]:
    """The run's pool limits with the variant's env on top: a variant whose point is another limit sets it
    there (and its parity entry shows it); everything else gets the run's."""
    return {"DB_POOL_SIZE": str(s.db_pool_size), "REDIS_POOL_SIZE": str(s.redis_pool_size),
            "DOWNSTREAM_POOL_SIZE": str(s.downstream_pool_size), "CACHE_TTL_S": str(s.cache_ttl_s),
            **target.variant.env}


Cell = tuple[str, int, "float | None", "str | None"]   # (scenario, concurrency, rate, network level)


@dataclass
class Plan:
    """What a run measures: each target with its scenarios, under one load profile."""
    matrix: dict[str, list[str] | None]   # target id -> scenarios (None: every scenario it serves), in order
    profile: Profile
    settings: Settings = field(default_factory=Settings)
    preset: str | None = None
    # the preset's claims of its study, each with the evidence that tests its explanation (claims.py)
    claims: list[dict] = field(default_factory=list)
    # Repeats run in rounds, each target once per round in a fresh random order (randomized multiple
    # interleaved trials, Abedi and Brecht): a fixed A B C A B C lets a slow drift of a shared machine
    # favour whoever runs first. The seed makes the order reproducible; run.json keeps both, and a
    # resumed run reads them back rather than drawing again.
    seed: int = field(default_factory=lambda: random.SystemRandom().randrange(2 ** 32))
    rounds: list[list[str]] | None = None
    # a workload's mixes by name (config/mix.py): each one's weights and its scenarios' parameters, as
    # run.json keeps them, so that a resumed run sends the same requests
    mixes: dict[str, dict] = field(default_factory=dict)
    # the workload file the run answers (its name, description, objective and prices): the answer's
    # cost is computed at these prices (results/workload_answer.py); {}: not a workload's run
    workload: dict = field(default_factory=dict)
    # the command line's options as the user gave them (config/option_table.py), kept for the record
    asked: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.rounds is None:
            self.rounds = self.draw_rounds(self.seed)

    def draw_rounds(self, seed: int) -> list[list[str]]:
        """The targets' order in each round (one round per repeat), shuffled afresh per round from seed."""
        rng = random.Random(seed)
        return [rng.sample(self.targets, len(self.targets)) for _ in range(self.repeat)]

    @property
    def targets(self) -> list[str]:
        return list(self.matrix)

    @property
    def repeat(self) -> int:
        return self.profile.repeat

    def scenario(self, name: str) -> Scenario:
        """The scenario (or the workload's mix) of that name."""
        return build(name, self.mixes[name]) if name in self.mixes else SCENARIOS[name]

    def scenarios_of(self, target: Target) -> list[str]:
        """The plan's scenarios the target serves (a mix: every one in it)."""
        own = target.framework.scenarios
        return [s for s in (self.matrix.get(target.id) or own)
                if all(p.scenario.served_as in own for p in parts_of(self.scenario(s)))]

    @property
    def topology(self) -> Topology:
        return Topology.from_dict(self.settings.topology)

    def cells(self, target: Target) -> list[Cell]:
        """(scenario, concurrency, rate, network level) of each cell of the target, in the order they
        run: a topology's network levels outermost, so that a link is reshaped once per level."""
        return [(s, c, r, net) for net in self.topology.levels() for s in self.scenarios_of(target)
                for c, r in self.profile.levels()]

    def row_keys(self, target: Target, repeat: int, cell: Cell) -> list[tuple]:
        """The schema.CELL_KEY of every row the cell writes."""
        scenario, conc, rate, network = cell
        return [(target.id, scenario, network, c, r, step, repeat)
                for c, r, step in self.profile.row_keys(conc, rate)]

    def todo(self, targets: list[Target], done: set[tuple]) -> list[tuple[int, Target, Cell]]:
        """(repeat, target, cell) of every cell with a row still missing, in the order they run: one
        round per repeat, the targets in that round's order (`rounds`), so that each repeat of a target
        is a fresh JVM measured among the others."""
        by_id = {t.id: t for t in targets}
        return [(r, by_id[tid], cell) for r, order in enumerate(self.rounds, 1) for tid in order if tid in by_id
                for cell in self.cells(by_id[tid]) if not set(self.row_keys(by_id[tid], r, cell)) <= done]

    def check_served(self, catalog: dict) -> None:
        """BenchError unless some target of the plan serves some of its scenarios."""
        if not any(self.scenarios_of(resolve(catalog, t)) for t in self.targets):
            asked = sorted({s for scenarios in self.matrix.values() for s in scenarios or ()})
            raise BenchError(f"no selected target serves {', '.join(asked)}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Plan":
        """The plan of a run.json, also of runs made before profiles (a throughput plan then)."""
        known = {f.name for f in fields(Settings)}
        settings = Settings(**{k: v for k, v in d["settings"].items() if k in known})
        if "matrix" not in d:
            profile = Profile(name="throughput", kind="throughput", driver="wrk",
                              concurrency=tuple(d["concurrency"]), duration_s=d["duration_s"],
                              warmup_s=d["warmup_s"], warmup_max_s=d.get("warmup_max_s", 90.0), repeat=d["repeat"])
            return cls(matrix={t: d.get("scenarios") for t in d["targets"]}, profile=profile, settings=settings,
                       seed=0, rounds=[list(d["targets"])] * d["repeat"])
        # a run made before randomised rounds ran its targets in the plan's order, round after round
        rounds = d.get("rounds") or [list(d["matrix"])] * Profile.from_dict(d["profile"]).repeat
        return cls(matrix=d["matrix"], profile=Profile.from_dict(d["profile"]), settings=settings,
                   preset=d.get("preset"), claims=d.get("claims", []), seed=d.get("seed", 0), rounds=rounds,
                   mixes=d.get("mixes", {}), workload=d.get("workload", {}), asked=d.get("asked", {}))
