"""The calibration store: what `bench calibrate` measured each load generator to reach on a machine,
and the bar a cell's figure is held against (the `near-generator-ceiling` flag).

results/calibration.json holds one record per machine (hostname, CPU model, cores) and in it one
self-contained entry per generator (ceiling, versions, pinning, date), so calibrating one generator
again keeps the others. Kept apart from the measuring (measure/calibrate.py) because runs read it on
every cell and write nothing but what a calibration hands them.
"""
from __future__ import annotations

import json
from pathlib import Path

from orchestrator import RESULTS_DIR
from orchestrator.core.cpus import parse_cpus
from orchestrator.errors import BadFile
from orchestrator.infra.hostinfo import host_info
from orchestrator.results.store import atomic_write, machine_key, read_json, updating

FILE = "calibration.json"


def _read(path: Path) -> dict:
    if not path.exists():
        return {"machines": {}}
    doc = read_json(path)
    if not isinstance(doc.get("machines"), dict):
        raise BadFile(path, "not calibration data (no machines): delete it or run `bench calibrate` again")
    return doc


def entries(results_dir: Path = RESULTS_DIR, loadgen_cpus: str | None = None, host: dict | None = None) -> dict[str, dict]:
    """Generator name -> its stored entry on this machine (or `host`), only those measured with it on
    `loadgen_cpus` when that is given."""
    record = _read(Path(results_dir) / FILE)["machines"].get(machine_key(host or host_info()), {})
    return {name: e for name, e in record.get("generators", {}).items()
            if loadgen_cpus is None or parse_cpus(str(e.get("loadgen_cpus", ""))) == parse_cpus(loadgen_cpus)}


def ceilings(host: dict | None = None, results_dir: Path = RESULTS_DIR, loadgen_cpus: str | None = None,
             key: str = "ceiling_rps") -> dict[str, float]:
    """Generator name -> its calibrated ceiling in rps on this machine (or `host`); {} when not calibrated.
    With `loadgen_cpus`, only ceilings measured with the generator on those same CPUs: a generator on
    one CPU has a lower ceiling than on two, and a bar measured under other pinning flags wrongly.
    key "open_ceiling_rps": the open-model ceilings instead (generators that run arrival rates)."""
    return {name: e[key] for name, e in entries(results_dir, loadgen_cpus, host).items() if e.get(key)}


def cell_ceiling(driver: str, open_model: bool, results_dir: Path, loadgen_cpus: str) -> float | None:
    """The calibrated ceiling a cell's rps is held against (`near-generator-ceiling`): for arrival
    rates, what the generator keeps in an open model (k6: 2,875-4,875 req/s here), not its
    closed-loop ceiling (about 30,000), which a rate cell k6 could not keep would never approach."""
    return ceilings(results_dir=results_dir, loadgen_cpus=loadgen_cpus,
                    key="open_ceiling_rps" if open_model else "ceiling_rps").get(driver)


def store(results_dir: Path, host: dict, entries: dict[str, dict], merge: bool = False,
          downstream: dict | None = None) -> Path:
    """Each generator's entry replaces the stored one (merge: adds its keys to it, if that one was
    measured with the generator on the same CPUs; one measured on others is replaced); the downstream
    service's measure (downstream_ceiling.py), when given, replaces its own."""
    path = Path(results_dir) / FILE
    with updating(path):   # read, modified and written by one writer at a time: no entry lost
        doc = _read(path)
        record = doc["machines"].setdefault(machine_key(host), {"generators": {}})
        record["host"] = {k: host[k] for k in ("hostname", "cpu_model", "cores")}
        if downstream is not None:
            record["downstream"] = downstream
        for name, entry in entries.items():
            stored = record["generators"].get(name, {})
            same_cpus = stored.get("loadgen_cpus") == entry.get("loadgen_cpus")
            record["generators"][name] = {**stored, **entry} if merge and same_cpus else entry
        atomic_write(path, lambda tmp: tmp.write_text(json.dumps(doc, indent=2) + "\n"))
    return path


def downstream_entry(results_dir: Path = RESULTS_DIR, host: dict | None = None) -> dict | None:
    """What `bench calibrate` measured of the downstream service on this machine, if it did."""
    return _read(Path(results_dir) / FILE)["machines"].get(machine_key(host or host_info()), {}).get("downstream")
