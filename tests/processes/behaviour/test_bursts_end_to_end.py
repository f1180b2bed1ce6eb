"""Bursts end to end against the fixture JVM with their real generators, k6 and h2load: exactly the
requests asked, at each concurrency at once; and h2load's one blind spot named."""
from __future__ import annotations

import socket
import threading

import pytest
from conftest import run_profile

from orchestrator.config.driver_registry import get
from orchestrator.config.load import LoadSpec
from orchestrator.config.scenarios import SCENARIOS
from orchestrator.drivers.base import DriverFailed


def test_burst_sends_exactly_the_requests_asked_at_each_concurrency(results_dir):
    df, ts, meta = run_profile(results_dir, "-s", "json,sleep", "-p", "burst", "--requests", "600",
                               "-c", "20,600", "--warmup", "1s", "--warmup-max", "1s")
    assert len(df) == 4 and set(df["driver"]) == {"k6"} and set(df["kind"]) == {"burst"}
    assert (df["status"] == "ok").all() and (df["requests"] == 600).all(), df[["requests", "status", "reason"]]
    assert df["rate"].isna().all() and df["step"].isna().all() and ts.empty
    sleep = df[df["scenario"] == "sleep"].set_index("concurrency")
    # 600 requests of 100 ms each over 20 connections take at least 30 rounds: 3 s; over 600
    # connections (one request each: one batch) they sleep at once, where k6's default batch of 6
    # at a time would take 10 s
    assert sleep.loc[20, "latency_min_ms"] >= 100 and sleep.loc[20, "duration_s"] >= 3.0
    assert sleep.loc[600, "latency_min_ms"] >= 100 and sleep.loc[600, "duration_s"] < sleep.loc[20, "duration_s"] / 2
    assert (df["latency_p50_ms"] <= df["latency_p95_ms"]).all() and (df["latency_p95_ms"] <= df["latency_max_ms"]).all()
    assert meta["plan"]["profile"]["requests"] == 600


def test_h2load_bursts_too(results_dir, tmp_path):
    path = tmp_path / "h2.toml"
    path.write_text('kind = "burst"\ndriver = "h2load"\nrequests = 300\nconcurrency = [30]\nwarmup = "0s"\n')
    df, _, _ = run_profile(results_dir, "-s", "sleep", "-p", str(path))
    assert df.loc[0, "driver"] == "h2load" and df.loc[0, "requests"] == 300, df.iloc[0]
    assert df.loc[0, "latency_min_ms"] >= 100 and df.loc[0, "latency_stdev_ms"] >= 0


def test_h2load_says_when_it_cannot_read_a_status_line(tmp_path):
    """Debian's h2load counts a response whose status line has no reason phrase (Tomcat's) as failed."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn, conn.makefile("rb") as f:
                while f.readline():
                    while f.readline() not in (b"\r\n", b""):
                        pass
                    conn.sendall(b"HTTP/1.1 200 \r\nContent-Length: 2\r\n\r\nok")

    threading.Thread(target=serve, daemon=True).start()
    spec = LoadSpec(port=server.getsockname()[1], scenario=SCENARIOS["plaintext"], concurrency=2, duration_s=0,
                    cpus="0", timeout_s=10, out_dir=tmp_path, requests=20)
    with pytest.raises(DriverFailed, match="without a reason phrase, as Tomcat sends; use the k6 burst driver"):
        get("h2load").run(spec)
    server.close()
