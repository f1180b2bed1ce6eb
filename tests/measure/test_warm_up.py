"""When a warm-up is steady: windows that no longer climb, a JIT gone quiet, an open model's latency
that no longer falls."""
from __future__ import annotations


def _windows(*rps, jit=0.0, littles=True):
    from orchestrator.measure.warmup import Window
    return [Window(rps=r, littles_ok=littles, jit_s=jit, duration_s=5.0) for r in rps]


def test_warm_up_is_steady_on_four_windows_that_no_longer_climb_with_a_quiet_jit():
    from orchestrator.measure.warmup import steady
    assert steady(_windows(900, 1000, 1010, 1000, 990))
    assert not steady(_windows(1000, 1010, 1000))                  # three windows are not enough
    # a warmed-up JVM's windows scatter (measured here: 16.4k, 18.4k, 18.1k, 16.1k): noise, not a climb
    assert steady(_windows(16402, 18442, 18064, 16090))
    assert steady(_windows(1000, 950, 900, 850))                   # a fall is not a warm-up


def test_a_slow_climb_is_not_steady_though_each_pair_agrees_within_5_percent():
    from orchestrator.measure.warmup import steady
    # +4 % a window: a two-window rule within 5 % called this steady
    assert not steady(_windows(1000, 1040, 1082, 1125))
    # a JIT at work, measured: Spring WebFlux on redis, 128 MB heap
    assert not steady(_windows(3399, 3839, 4591, 6271))


def test_a_jvm_still_compiling_is_not_steady():
    from orchestrator.measure.warmup import steady
    assert not steady(_windows(1000, 1000, 1000, 1000, jit=0.5))        # 10 % of the window compiling
    # connections that wait to be accepted are the server's design, not a warm-up: the cell's own check shows them
    assert steady(_windows(1000, 1000, 1000, 1000, littles=False))


def test_an_open_model_warm_up_is_steady_when_its_latency_no_longer_falls():
    from orchestrator.measure.warmup import Window, steady

    def at_rate(*p50_ms):   # k6 kept its 500/s in every window: rps is the rate whatever the JVM does
        return [Window(rps=500.0, littles_ok=True, jit_s=0.0, duration_s=3.0, latency_p50_ms=p) for p in p50_ms]
    # a JVM whose JIT is still at work answers sooner each window: not steady, though rps never moved
    assert not steady(at_rate(9.0, 6.0, 4.0, 3.0))
    assert steady(at_rate(3.1, 3.0, 3.1, 3.0))


def test_the_next_window_waits_until_the_server_has_finished_what_the_last_left(tmp_path):
    """A real process busy for 1.5 s after its load stopped (a server answering what a closed window
    left in flight) holds the drain that long, and no longer once it is idle."""
    import subprocess
    import sys

    from orchestrator.measure.warmup import DRAIN_MAX_S, drain
    from orchestrator.targets.runtimes.process import ProcessServer
    busy = subprocess.Popen([sys.executable, "-c", "import time\n"
                             "end = time.monotonic() + 1.5\n"
                             "while time.monotonic() < end: pass\n"
                             "time.sleep(60)\n"])
    try:
        waited = drain(ProcessServer(busy, tmp_path / "log"), None)
    finally:
        busy.kill()
        busy.wait()
    assert 1.0 <= waited < DRAIN_MAX_S
