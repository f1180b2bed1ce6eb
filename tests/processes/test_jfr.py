"""Flight Recorder evidence on real fixture JVMs: pinning where a virtual thread cannot unmount (and
none where JDK 24+ lets it), an event loop busy in application code, a flame graph per cell (slow:
real JVMs and k6). Null (not zero) columns when the option is off: test_pipeline's run."""
from pathlib import Path

import pandas as pd
from conftest import PORTS, bench

from orchestrator.report import why as jfr_report
from orchestrator.results import store as results


def run(results_dir: Path, target: str, scenario: str, rate: int, *extra: str) -> pd.DataFrame:
    r = bench("run", *PORTS, "-f", target, "-s", scenario, "-p", "rate", "--rate", str(rate), "--duration", "4s",
              "--warmup", "1s", "--warmup-max", "1s", *extra, "--results-dir", str(results_dir))
    assert r.returncode == 0, r.stdout + r.stderr
    return results.load(root=results_dir)


def test_a_sleep_under_a_native_frame_pins_and_a_sleep_holding_a_monitor_no_longer_does(results_dir):
    # one carrier (one server CPU), pinned for each 100 ms sleep: at most 10 requests a second
    pinned = run(results_dir, "fixture:pinned-native", "sleep", 5, "--jfr").iloc[-1]
    assert pinned["status"] == "ok" and pd.isna(pinned["jfr_error"]), pinned["jfr_error"]
    # 5 requests a second for 4 s, each pinned for its sleep: about 20 events of 100 ms
    assert pinned["jfr_pinned_count"] >= 10 and pinned["jfr_pinned_ms"] >= 100 * 10
    assert "Fixture.sleepingCompare" in pinned["jfr_pinned_top_stack"]
    run_dir = results.find_run(None, results_dir)
    assert (run_dir / pinned["jfr_file"]).stat().st_size > 0 and (run_dir / pinned["jfr_flamegraph"]).exists()

    # one monitor held for 100 ms serves 10 requests a second: 15 arrive, so they queue at it
    held = run(results_dir, "fixture:sleep-synchronized", "sleep", 15, "--jfr").iloc[-1]
    assert held["status"] == "ok" and held["jfr_samples"] >= 0
    # JEP 491 (JDK 24): a virtual thread sleeping in synchronized unmounts; the JDK here is 25
    assert held["jfr_pinned_count"] == 0 and pd.isna(held["jfr_pinned_top_stack"])
    # the others wait for the monitor instead: one thread asleep at a time, the rest queued behind it
    # (JDK 25's Flight Recorder emits no jdk.JavaMonitorEnter for a virtual thread that unmounts there)
    assert 0.7 <= held["jfr_sleep_ms"] / 1000 / held["duration_s"] <= 1.1
    assert held["latency_p50_ms"] > 300
    # ... which the thread dumps see: virtual threads blocked on the fixture's monitor
    assert held["dump_samples"] >= 2 and held["dump_app_lock_waiting"] >= 2, held["dump_app_lock_site"]
    assert "Fixture" in held["dump_app_lock_site"] and "on a monitor" in held["dump_app_lock_site"]


def test_cpu_work_on_an_event_loop_shows_as_its_share_in_application_code(results_dir):
    # about 70 % of the one CPU on the event loop: JFR samples it every 20 ms while it runs
    row = run(results_dir, "fixture:event-loop", "cpu", 800, "--jfr").iloc[-1]
    assert row["status"] == "ok" and pd.isna(row["jfr_error"]), row["jfr_error"]
    assert row["jfr_event_loop_samples"] > 10
    assert row["jfr_event_loop_app_share"] > 0.5, row["jfr_hot_methods"]
    assert "Fixture.countPrimes" in row["jfr_hot_methods"]
    assert row["jfr_platform_threads_busy"] >= 1 and row["jfr_alloc_mb_per_s"] >= 0
    # the flame graph (async-profiler's converter) of the window's CPU samples
    graph = (results.find_run(None, results_dir) / row["jfr_flamegraph"]).read_text()
    assert "<html" in graph.lower() and "countPrimes" in graph   # its names are prefix-compressed


def test_a_semaphore_in_application_code_shows_as_threads_waiting_on_it(results_dir):
    # 64 connections to /redis: behind 2 permits, nearly every request in flight waits for one; without
    # them, none does. Redis sees one command per request either way, and virtual threads park unseen by
    # Flight Recorder, so only the thread dumps can tell the two apart.
    r = bench("run", *PORTS, "-f", "fixture:ok,fixture:redis-semaphore-2", "-s", "redis", "-c", "64", "-d", "3s",
              "--warmup", "1s", "--warmup-max", "1s", "--jfr", "--results-dir", str(results_dir))
    assert r.returncode == 0, r.stdout + r.stderr
    df = results.load(root=results_dir)
    rows = df.set_index("variant")
    limited, free = rows.loc["redis-semaphore-2"], rows.loc["ok"]
    assert pd.isna(limited["jfr_error"]) and pd.isna(free["jfr_error"]), (limited["jfr_error"], free["jfr_error"])
    assert 0.9 <= limited["redis_commands_per_request"] <= 1.1 and 0.9 <= free["redis_commands_per_request"] <= 1.1
    # ten times the free variant's at least: on a slow day (2,069 req/s against 2,291 free) the server's CPU,
    # not the permits, held most requests, and 18.7 of them waited on the semaphore at a dump
    assert limited["dump_samples"] >= 1 and limited["dump_app_lock_waiting"] >= 10, limited["dump_app_lock_site"]
    assert limited["dump_app_lock_site"].startswith("Fixture$Redis.mget(Fixture.java:") and "Semaphore" in \
        limited["dump_app_lock_site"]
    # one dump at least: a dump of 64 virtual threads cost CI's slow host enough that the duty factor
    # (thread_dumps.DUTY_FACTOR) let only one into the 3-s window
    assert free["dump_samples"] >= 1 and free["dump_app_lock_waiting"] < 1
    # the report's "why" table carries it beside the other evidence
    why = jfr_report.why_table(df, "redis").set_index("target")
    assert why.loc["fixture:redis-semaphore-2", "waiting on app locks"].split(":")[0].replace(",", "") \
        == f"{limited['dump_app_lock_waiting']:,.1f}".replace(",", "")
    assert "Semaphore" in why.loc["fixture:redis-semaphore-2", "waiting on app locks"]


def test_a_pools_idle_workers_are_not_parked_and_allocation_is_read_around_the_window(results_dir):
    # 16 workers, 40 sleeps of 100 ms a second: 4 asleep on average, 12 idle in the pool's getTask
    row = run(results_dir, "fixture:pool-16", "sleep", 40, "--jfr").iloc[-1]
    assert row["status"] == "ok" and pd.isna(row["jfr_error"]), row["jfr_error"]
    window_s = row["duration_s"]
    assert 3.0 <= row["jfr_sleep_ms"] / 1000 / window_s <= 5.0
    assert row["jfr_parked_ms"] / 1000 / window_s < 1.0   # idle is not held up
    # each thread's allocated bytes between readings 100 ms apart around the window: a small server
    # at 40 requests a second allocates a few MB/s at most, not what its threads allocated since start
    assert 0 < row["jfr_alloc_mb_per_s"] < 50


def test_a_lock_counts_as_the_application_s_only_where_its_own_frame_took_it():
    from orchestrator.measure.thread_dumps import waiting_site
    semaphore = {"state": "WAITING", "parkBlocker": {"object": "java.util.concurrent.Semaphore$NonfairSync@1"},
                 "stack": ["java.base/jdk.internal.misc.Unsafe.park(Native Method)",
                           "java.base/java.util.concurrent.locks.AbstractQueuedSynchronizer.acquire(AQS.java:1)",
                           "java.base/java.util.concurrent.Semaphore.acquireUninterruptibly(Semaphore.java:2)",
                           "app//Fixture$Redis.mget(Fixture.java:206)"]}
    assert waiting_site(semaphore) == "Fixture$Redis.mget(Fixture.java:206) on Semaphore$NonfairSync"
    synchronized = {"state": "BLOCKED", "stack": ["app//Fixture.sleepHolding(Fixture.java:300)",
                                                  "app//Fixture.handle(Fixture.java:100)"]}
    assert waiting_site(synchronized) == "Fixture.sleepHolding(Fixture.java:300) on a monitor"
    # the JDK's HTTP server's monitor, and a JDK stream's internal lock, entered from application code
    jdk_monitor = {"state": "BLOCKED", "stack": ["jdk.httpserver/sun.net.httpserver.ServerImpl.x(ServerImpl.java:1)",
                                                 "app//Fixture.send(Fixture.java:359)"]}
    jdk_lock = {"state": "WAITING", "parkBlocker": {"object": "java.util.concurrent.locks.ReentrantLock$NonfairSync@2"},
                "stack": ["java.base/jdk.internal.misc.Unsafe.park(Native Method)",
                          "java.base/java.util.concurrent.locks.ReentrantLock.lock(ReentrantLock.java:1)",
                          "java.base/jdk.internal.misc.InternalLock.lock(InternalLock.java:1)",
                          "java.base/java.io.BufferedOutputStream.write(BufferedOutputStream.java:1)",
                          "app//Fixture.send(Fixture.java:359)"]}
    assert waiting_site(jdk_monitor) is None and waiting_site(jdk_lock) is None
