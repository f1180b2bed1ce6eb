"""No secret and no environment in any file a run leaves, and the run's folder readable by its owner only:
Vert.x recorded by Flight Recorder on redis and db-read (the JVM holds a live Redis client and a
MariaDB pool, each given the infrastructure's password), with a canary variable in the orchestrator's
environment, against Redis and MariaDB that `bench infra up` started before the run (their password in
a state file only its owner reads, gone after `bench infra down`)."""
from __future__ import annotations

import json
import secrets
import stat
import subprocess
import sys
from pathlib import Path

import pandas as pd
from conftest import PORTS, ROOT, bench, bench_env, owned, wait_for

from orchestrator.infra.backends import STATE_FILE

JFR = Path("/usr/lib/jvm/temurin-25-jdk-amd64/bin/jfr")


def environment_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)


def readable_text(path: Path) -> list[bytes]:
    """What a file says, as a reader would see it: its bytes, a recording decoded by the JDK's own
    `jfr print`, a parquet file's every cell (its pages are compressed)."""
    texts = [path.read_bytes()]
    if path.suffix == ".jfr":
        done = subprocess.run([str(JFR), "print", str(path)], capture_output=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert b"jdk.ExecutionSample" in done.stdout   # decoded, not an empty answer
        texts.append(done.stdout)
    elif path.suffix == ".parquet":
        df = pd.read_parquet(path)
        texts.append(df.to_csv().encode() + " ".join(df.columns).encode())
    return texts


def leaks(run_dir: Path, needles: dict[str, str]) -> list[str]:
    found = []
    for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
        for text in readable_text(path):
            found += [f"{name} in {path.relative_to(run_dir)}" for name, value in needles.items()
                      if value.encode() in text]
    return found


def loose_modes(run_dir: Path) -> list[str]:
    """Files and folders of the run that anyone but its owner may read, write or enter."""
    return [f"{oct(stat.S_IMODE(p.stat().st_mode))} {p.relative_to(run_dir.parent)}"
            for p in [run_dir, *run_dir.rglob("*")]
            if stat.S_IMODE(p.stat().st_mode) != (0o700 if p.is_dir() else 0o600)]


def test_a_recorded_run_leaves_no_password_and_no_environment_and_only_its_owner_reads_it(results_dir, tmp_path):
    up = bench("infra", "up", *PORTS[2:])
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        password = json.loads(STATE_FILE.read_text())["password"]
        assert oct(STATE_FILE.stat().st_mode & 0o777) == "0o600"
        recorded(results_dir, tmp_path, password)
    finally:
        down = bench("infra", "down")
    assert down.returncode == 0 and not STATE_FILE.exists()


def recorded(results_dir: Path, tmp_path: Path, password: str) -> None:
    canary = secrets.token_hex(16)
    out = tmp_path / "bench.out"
    argv = [sys.executable, "-m", "orchestrator.cli", "run", *PORTS, "-f", "vertx:eventloop", "-s", "redis,db-read",
            "--jfr", "-c", "4", "--warmup", "1s", "--warmup-max", "1s", "-d", "1s", "--results-dir", str(results_dir)]
    with open(out, "w") as log:
        bench_run = subprocess.Popen(argv, cwd=ROOT, env=bench_env(None, BENCH_TEST_CANARY=canary), stdout=log,
                                     stderr=subprocess.STDOUT)
        try:
            (jvm, *_) = wait_for(lambda: owned(bench_run.pid, "vertx/target/vertx.jar"), what="Vert.x's JVM")
            target_env = environment_of(jvm.pid)
        finally:
            code = bench_run.wait(timeout=600)
    assert code == 0, out.read_text()[-3000:]
    # the run used the infrastructure that was up, with its password
    assert target_env["REDIS_PASSWORD"] == password and target_env["DB_PASSWORD"] == password and len(password) >= 16
    (run_dir,) = results_dir.iterdir()
    assert len(list(run_dir.rglob("*.jfr"))) == 2, "a recording per scenario: nothing was searched"
    assert leaks(run_dir, {"the password": password, "the canary": canary}) == []
    assert password not in out.read_text()   # nor what it printed
    assert loose_modes(run_dir) == []
    # what the target started with: the contract's variables and what a JVM needs, not bench's environment
    assert "BENCH_TEST_CANARY" not in target_env and "BENCH_FRAMEWORKS_DIR" not in target_env, sorted(target_env)
