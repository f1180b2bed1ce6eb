"""What `bench run` was asked, and the usage rules that turn it into a Plan. Some options only make sense
together (--quick with --preset; Locust workers elsewhere with a ramp profile that has workers) and some
exclude each other (--preset with -f, -v, -s or --profile): the rules are kept here, apart from Typer,
so that they read as one list and a test can check them without starting the command line."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable

from rich.markup import escape

from orchestrator.cli.common import check_writable, override_profile, parse_settings, select_targets
from orchestrator.config import options, presets, profiles, workload
from orchestrator.config import topology as topology_mod
from orchestrator.config.modes import AOT_CACHE, COLD, DEFAULT_JVM, JVM_MODES, STARTS, WARM, with_modes
from orchestrator.config.option_table import Given
from orchestrator.config.plan import Plan
from orchestrator.config.scenarios import SCENARIOS, parse_list
from orchestrator.core.schema import percentile_label
from orchestrator.errors import BadFile, UsageError
from orchestrator.infra.docker_engine import remote_address
from orchestrator.results.store import RUN_JSON, RunStore


class RunOptions(Given):
    """`bench run`'s options as given, unchecked: option_table's options of `run`, by name."""

    def plans(self, catalog: dict, say: Callable[[str], None]) -> list[Plan]:
        """The new runs these options ask for, one after the other: a preset of parts runs each part as a
        run of its own (presets.runs); every one is checked before any measures."""
        names = presets.runs(self.preset) if self.preset else [None]
        # the parts share the preset's account of how it was scaled: said once, with the first
        return [RunOptions(**{**vars(self), 'preset': name}).plan(catalog, say, scaled=i == 0)
                for i, name in enumerate(names)]

    def plan(self, catalog: dict, say: Callable[[str], None], scaled: bool = True) -> Plan:
        """The new run these options ask for (--resume aside), or UsageError for the first rule they
        break; `say` prints what a preset chose as soon as it is read, before the rules that follow."""
        if self.quick and not self.preset:
            raise UsageError("--quick goes with --preset")
        if self.repeat is not None and self.repeat < 1:
            raise UsageError("--repeat must be 1 or more")
        if self.workload and self.preset:
            raise UsageError("--workload and --preset each choose the targets, scenarios and profile: give one")
        chosen = self._preset(catalog, say, scaled) if self.preset else None
        mixes, slo, heap, answers = {}, self.slo, self.heap, {}
        if chosen:
            matrix, prof = chosen.matrix, chosen.profile
        elif self.workload:
            w = self._workload(catalog, say)
            # the answer is a capacity and what it costs: no probes past the knee, no spike
            prof = replace(profiles.load("capacity"), overload=(), spike_s=0.0)
            matrix, mixes = {t: [w.name] for t in w.targets}, {w.name: w.spec}
            answers = {"name": w.name, "description": w.description, "objective": w.objective_text,
                       "prices": w.prices, "prices_are_examples": w.prices_are_examples}
            slo, heap = slo or w.objective_text, heap or ",".join(w.heaps) or None
        else:
            scenarios = parse_list(self.scenario, list(SCENARIOS), "scenario")
            matrix = {t.id: scenarios for t in select_targets(self.framework, self.variant, catalog)}
            prof = profiles.load(self.profile)
        prof = override_profile(prof, self, slo)
        heaps = tuple(options.heap(h.strip()) for h in heap.split(",")) if heap else ()
        if len(set(heaps)) < len(heaps):
            raise UsageError(f"--heap {heap} names a heap twice")
        settings = parse_settings(self, chosen, heaps[0] if heaps else None)
        jvm_modes = parse_list(self.jvm_mode, list(JVM_MODES), "JVM mode") if self.jvm_mode else \
            (chosen.jvm_modes if chosen else (DEFAULT_JVM,))
        starts = parse_list(self.start, list(STARTS), "start") if self.start else (chosen.starts if chosen else (WARM,))
        if COLD in starts and not prof.rules.single_window:
            raise UsageError(f"--start cold meets one window with a JVM that has not warmed up: it needs a profile of "
                             f"one window a cell (throughput, burst or rate), not {prof.kind}")
        if AOT_CACHE in jvm_modes and settings.runtime == "docker" and remote_address():
            raise UsageError(f"--jvm-mode aot-cache needs the Docker engine on this machine: the one DOCKER_HOST names "
                             f"({remote_address()}) cannot mount the cache the run trains and keeps in its folder here")
        settings = replace(settings, jvm_modes=tuple(jvm_modes), starts=tuple(starts))
        matrix = with_modes(matrix, jvm_modes, starts, heaps)
        plan = Plan(matrix=matrix, profile=prof, settings=settings, preset=self.preset,
                    claims=list(chosen.claims) if chosen else [], mixes=mixes, workload=answers,
                    asked={k: str(v) if isinstance(v, Path) else v for k, v in vars(self).items()})
        plan.check_served(catalog)
        if plan.topology.workers != topology_mod.LOCAL and not (prof.ramp and prof.ramp.workers):
            raise UsageError(f"topology {plan.topology.name} puts Locust workers on host {plan.topology.workers}: "
                             f"that needs a ramp profile with workers (-p ramp --workers N)")
        if self.locust_master and not (prof.ramp and prof.ramp.workers):
            raise UsageError("--locust-master waits for Locust workers: that needs a ramp profile with workers "
                             "(-p ramp --workers N)")
        check_writable(self.results_dir)
        return plan

    def _workload(self, catalog: dict, say: Callable[[str], None]) -> workload.Workload:
        """The workload file asked for: it chooses the targets, the mix and the profile (capacity at its
        objective), as a preset does."""
        if self.preset or self.framework or self.variant or self.scenario or self.profile != "throughput":
            raise UsageError("--workload chooses the targets, the mix and the profile (capacity at its objective): "
                             "leave out --preset, -f, -v, -s and --profile")
        w = workload.load(workload.find(self.workload), catalog)
        say(f"workload {w.name}: {w.description}")
        say(f"[dim]{escape(w.mix.contract)}; objective {w.objective_text}"
            + "".join(f", {s} {percentile_label(o[0])}={o[1]:g}ms" for s, o in w.objectives.items()) + "[/]")
        return w

    def _preset(self, catalog: dict, say: Callable[[str], None], scaled: bool) -> presets.Preset:
        """The preset asked for, in its quick form with --quick; it chooses what -f, -v, -s and --profile would."""
        if self.framework or self.variant or self.scenario or self.profile != "throughput":
            raise UsageError("--preset chooses the targets, scenarios and profile: leave out -f, -v, -s and "
                             "--profile")
        chosen = presets.load(self.preset, catalog, quick=self.quick)
        say(f"preset {chosen.name}: {chosen.description}")
        if chosen.scaled and scaled:
            say(f"[dim]{escape(' '.join(chosen.scaled.split()))}[/]")
        if self.quick:
            study = sum(len(s) for s in presets.load(self.preset, catalog).matrix.values())
            cells = "; ".join(f"{t} {','.join(s)}" for t, s in chosen.matrix.items())
            say(f"quick form, a smoke of the preset: {sum(len(s) for s in chosen.matrix.values())} of its "
                f"{study} cells ({cells}), one JVM per target"
                + ("" if chosen.jfr else ", Flight Recorder off (no claim of it reads its evidence)"))
        return chosen


def resumed_plan(store: RunStore) -> Plan:
    """The plan of the run --resume continues, from its run.json; BadFile when that holds none that loads."""
    try:
        return Plan.from_dict(store.meta()["plan"])
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise BadFile(store.dir / RUN_JSON, f"holds no plan that loads ({type(e).__name__}: {e})") from None
