"""Disk with a cap: raw files kept compact once read, logs cut to their head and tail, free space
checked before a run, and `bench prune` on run folders made up of real files. No JVM, no load."""
from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import sys
import time

import numpy as np
import pytest
from conftest import bench

from orchestrator.config import profiles
from orchestrator.config.plan import Plan, Settings
from orchestrator.drivers.h2load import gzip_away, read_log
from orchestrator.drivers.k6 import read_requests
from orchestrator.drivers.pacer import RECORD, RECORD_BYTES, keep_records, read_records
from orchestrator.infra import log_cap
from orchestrator.infra.procs import log_tail, spawn
from orchestrator.measure import disk_space


def test_pacer_records_are_kept_as_parquet_every_arrival_exact_and_the_raw_file_deleted(tmp_path):
    n, rate = 50_000, 20_000
    records = np.zeros(n, dtype=RECORD)
    rng = np.random.default_rng(1)
    records["intended_ns"] = (np.arange(n) * 1e9 / rate).astype("u8")
    records["latency_ns"] = rng.lognormal(13, 0.5, n).astype("u8")
    records["lag_us"] = rng.geometric(0.05, n)
    records["status"] = np.where(rng.random(n) < 0.01, -3, 200)
    records["flags"] = rng.random(n) < 0.1
    raw = tmp_path / "pacer-json-r20000.records"
    records.tofile(raw)
    assert raw.stat().st_size == n * RECORD_BYTES
    kept = keep_records(read_records(raw), raw)
    assert not raw.exists() and kept.name == "pacer-json-r20000.records.parquet"
    assert kept.stat().st_size < n * RECORD_BYTES / 3
    back = read_records(kept)
    assert back.dtype == records.dtype and (back == records).all()


K6_CSV = ("metric_name,timestamp,metric_value,check,status,url\n"
          "http_reqs,1000000,1,,200,http://127.0.0.1/x\n"
          "http_req_duration,1000000,100.0,,200,http://127.0.0.1/x\n"
          "http_req_waiting,1000000,99.0,,200,http://127.0.0.1/x\n"
          "http_req_duration,1200000,250.0,,503,http://127.0.0.1/x\n"
          "http_req_duration,1500000,60000.0,,,http://127.0.0.1/x\n"
          "http_req_duration,1700000,20.5,,204,http://127.0.0.1/x\n")


def test_k6_per_request_csv_reads_the_same_gzipped_as_written_plain(tmp_path):
    plain, packed = tmp_path / "k6.requests.csv", tmp_path / "k6.requests.csv.gz"
    plain.write_text(K6_CSV)
    packed.write_bytes(gzip.compress(K6_CSV.encode()))
    latencies, status_errors, no_response, first, window, good_ends = read_requests(packed)
    assert read_requests(plain) == (latencies, status_errors, no_response, first, window, good_ends)
    assert latencies == [100.0, 250.0, 20.5] and (status_errors, no_response) == (1, 1)
    # the first request sent: the one with no response, 60 s before its end at 1.5 s
    assert first == pytest.approx(1.5 - 60) and window == pytest.approx(1.7 - first)
    assert good_ends == [1.0, 1.7]


def test_h2load_request_log_is_gzipped_once_read_and_nothing_of_it_is_lost(tmp_path):
    log = tmp_path / "h2load-json-c4.requests.tsv"
    log.write_text("".join(f"{1_000_000 + i}\t{200 if i % 5 else 0}\t{1000 + i}\n" for i in range(100)))
    latencies, first = read_log(log)
    text = log.read_text()
    packed = gzip_away(log)
    assert not log.exists() and gzip.decompress(packed.read_bytes()).decode() == text
    assert len(latencies) == 80 and first == 1.0


def test_a_log_over_the_cap_keeps_its_head_and_tail_and_says_how_much_was_cut(tmp_path):
    log = tmp_path / "server.log"
    lines = [f"line {i:06d}\n".encode() for i in range(3000)]   # 12 bytes each
    log.write_bytes(b"".join(lines))
    cut = log_cap.trim(log, limit=20_000, head=1200, tail=6000)
    data = log.read_bytes()
    assert cut == 36_000 - 1200 - 6000
    assert data.startswith(b"".join(lines[:100])) and data.endswith(b"".join(lines[-500:]))
    assert log_cap.cut_line(cut) in data and len(data) == 1200 + len(log_cap.cut_line(cut)) + 6000
    # more is appended, and the next trim counts both cuts in one line after the same head
    with open(log, "ab") as f:
        f.write(b"".join(lines) * 2)
    total = log_cap.trim(log, cut, limit=20_000, head=1200, tail=6000)
    data = log.read_bytes()
    assert total == cut + (len(lines) * 12 * 2 + 6000 - 6000)
    assert data.count(b"bytes of this log cut here") == 1 and log_cap.cut_line(total) in data
    assert data.startswith(b"".join(lines[:100])) and data.endswith(b"".join(lines[-500:]))
    # under the cap, nothing changes
    assert log_cap.trim(log, total) == total and log.read_bytes() == data


def test_a_spawned_process_that_logs_without_limit_leaves_a_capped_log_with_its_last_words(tmp_path):
    log = tmp_path / "chatty.log"
    # 12 MiB of numbered lines in 1-MiB writes, then the line a failure message would quote
    child = ("import sys, time\n"
             "line = b'x' * 1023 + b'\\n'\n"
             "for i in range(12):\n"
             "    sys.stdout.buffer.write(line * 1024); sys.stdout.flush(); time.sleep(0.1)\n"
             "print('Exception: the last words', flush=True)\n")
    proc = spawn([sys.executable, "-c", child], log_path=log)
    proc.wait(timeout=60)
    deadline = time.monotonic() + 10   # the watcher's last trim, within a second of the exit
    while log.stat().st_size > log_cap.LIMIT and time.monotonic() < deadline:
        time.sleep(0.1)
    assert log.stat().st_size <= log_cap.LIMIT
    assert b"bytes of this log cut here" in log.read_bytes()
    assert log_tail(log, 1) == "Exception: the last words"


def plan(tmp_path, profile: str, **changes) -> Plan:
    settings = Settings(jfr=changes.pop("jfr", False), jvm_modes=changes.pop("jvm_modes", ("default",)))
    return Plan(matrix={"fixture:ok": ["json"]}, profile=profiles.load(profile).with_overrides(**changes),
                settings=settings)


def test_a_run_whose_worst_cell_would_not_fit_stops_with_the_estimate_and_the_free_space(tmp_path):
    # 1,000,000 arrivals a second for 30 days: 62 TB of pacer's records in one cell
    huge = plan(tmp_path, "rate", rates=(1_000_000,), duration_s=30 * 86400.0, jfr=True)
    with pytest.raises(disk_space.NotEnoughSpace) as e:
        disk_space.check(huge, tmp_path)
    message = str(e.value)
    assert e.value.exit_code == 2 and "\n" not in message
    assert "free on the filesystem of" in message and "pacer records" in message and "Flight Recorder" in message
    parts = disk_space.worst_cell(huge, None)
    assert parts["pacer records"] == RECORD_BYTES * 1_000_000 * (30 * 86400 + huge.profile.warmup_s)
    # a quick cell fits, and its estimate names every kind of file it writes
    small = plan(tmp_path, "rate", rates=(500, 2000), duration_s=5.0, jfr=True, jvm_modes=("default", "aot-cache"))
    disk_space.check(small, tmp_path)
    parts = disk_space.worst_cell(small, None)
    assert parts["pacer records"] == RECORD_BYTES * 2000 * (5 + small.profile.warmup_s)
    assert parts["Flight Recorder"] == pytest.approx(744 * 1024)
    assert parts["AOT caches"] == disk_space.AOT_CACHE_BYTES and parts["logs"] == 2 * log_cap.LIMIT
    # a capacity cell is bounded by the generator's calibrated open-model ceiling
    search = plan(tmp_path, "capacity", duration_s=4.0)
    seconds = search.profile.rules.measured_s(search.profile) + search.profile.warmup_s
    assert disk_space.worst_cell(search, 80_000)["pacer records"] == RECORD_BYTES * 80_000 * seconds
    burst = plan(tmp_path, "burst", requests=10_000)
    assert disk_space.worst_cell(burst, None)["k6 per-request files"] == 10_000 * disk_space.K6_CSV_BYTES_PER_REQUEST


def make_run(root, run_id: str, days_ago: float, raw_bytes: int = 1000):
    """A run folder of real files: what a run with --jfr, pacer, a burst and AOT caches leaves."""
    run = root / run_id
    started = dt.datetime.now() - dt.timedelta(days=days_ago)
    files = {
        "run.json": json.dumps({"run_id": run_id, "started_at": started.isoformat(timespec="seconds")}).encode(),
        "measurements.parquet": b"P" * 500, "timeseries.parquet": b"P" * 100,
        "report.html": b"<html>", "report.md": b"# r", "report-json-throughput.png": b"png",
        "logs/fixture-ok-1.log": b"started\n", "logs/verify-fixture-ok-r1.txt": b"ok\n",
        "logs/jfr/fixture-ok-r1/json-r500.html": b"<flame graph>",
        "logs/load/fixture-ok-r1/pacer-json-r500.json": b"{}", "logs/load/fixture-ok-r1/pacer-json-r500.log": b"{}",
    }
    raw = {
        "logs/jfr/fixture-ok-r1/json-r500.jfr": raw_bytes, "logs/jfr/fixture-ok-r1/json-r500-threads.jsonl": 10,
        "logs/load/fixture-ok-r1/pacer-json-r500.records.parquet": raw_bytes,
        "logs/load/fixture-ok-r1/warmup/pacer-json-r500.records": raw_bytes,
        "logs/load/fixture-ok-r1/k6-json-c64.requests.csv.gz": raw_bytes,
        "logs/load/fixture-ok-r1/h2load-json-c64.requests.tsv.gz": 10, "aot/fixture-ok.aot": raw_bytes,
    }
    for name, data in [*files.items(), *((n, b"r" * size) for n, size in raw.items())]:
        (run / name).parent.mkdir(parents=True, exist_ok=True)
        (run / name).write_bytes(data)
    return run, set(files), set(raw)


def tree(run) -> set[str]:
    return {str(p.relative_to(run)) for p in run.rglob("*") if p.is_file()}


@pytest.fixture(autouse=True)
def own_run_lock(tmp_path, monkeypatch):
    """bench prune takes the run lock: a lock of the test's own, so that a user's live run does not fail it."""
    monkeypatch.setenv("BENCH_RUN_LOCK", str(tmp_path / "run.lock"))


def test_bench_prune_by_age_lists_with_dry_run_then_removes_only_old_runs_raw_files(results_dir):
    old, kept, raw = make_run(results_dir, "20261001-120000", days_ago=40)
    new, *_ = make_run(results_dir, "20261126-120000", days_ago=1)
    before_new = tree(new)
    dry = bench("prune", "--older-than", "30d", "--dry-run", "--results-dir", str(results_dir))
    assert dry.returncode == 0, dry.stderr
    assert tree(old) == kept | raw and tree(new) == before_new
    out = " ".join(dry.stdout.split())
    assert "20261001-120000: 7 raw files, 4.9 KiB" in out and "20261126-120000" not in out
    assert all(name in out for name in raw) and "aot/fixture-ok.aot 1,000 B" in out
    assert "would free 4.9 KiB in 1 runs" in out
    done = bench("prune", "--older-than", "30d", "--results-dir", str(results_dir))
    assert done.returncode == 0, done.stderr
    assert tree(old) == kept and tree(new) == before_new and "freed 4.9 KiB in 1 runs" in done.stdout
    assert not (old / "aot").exists() and (old / "logs/load/fixture-ok-r1").is_dir()
    # nothing old is left to prune
    again = bench("prune", "--older-than", "30d", "--results-dir", str(results_dir))
    assert again.returncode == 0 and "freed 0 B in 0 runs" in again.stdout


def test_bench_prune_to_a_size_takes_the_oldest_runs_first_until_all_fit(results_dir):
    runs = [make_run(results_dir, f"2026110{i}-120000", days_ago=10 - i, raw_bytes=100_000) for i in range(1, 4)]
    total = sum(p.stat().st_size for p in results_dir.rglob("*") if p.is_file())
    # room for all but about one run's raw files: only the oldest goes
    r = bench("prune", "--max-size", str(total - 300_000), "--results-dir", str(results_dir))
    assert r.returncode == 0, r.stderr
    (first, kept, raw), (second, _, _), (third, _, _) = runs
    assert tree(first) == kept and tree(second) == kept | raw and tree(third) == kept | raw
    r = bench("prune", "--max-size", "1k", "--results-dir", str(results_dir))
    assert r.returncode == 0 and tree(second) == kept and tree(third) == kept


@pytest.mark.parametrize("args, says", [
    ((), "needs --older-than AGE, --max-size SIZE or both"),
    (("--older-than", "30 days"), "--older-than '30 days' is not a duration"),
    (("--older-than", "0d"), "--older-than must be more than zero"),
    (("--max-size", "5 gallons"), "--max-size '5 gallons' is not a size"),
])
def test_bench_prune_refuses_bad_arguments_in_one_line(results_dir, args, says):
    r = bench("prune", *args, "--results-dir", str(results_dir))
    assert r.returncode == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_bench_prune_refuses_a_results_dir_that_is_a_file(tmp_path):
    f = tmp_path / "results"
    f.write_text("")
    r = bench("prune", "--older-than", "30d", "--results-dir", str(f))
    assert r.returncode == 2 and "is not a folder" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert os.path.isfile(f)
