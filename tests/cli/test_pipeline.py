"""The command line's bad input: one line and exit 2, and a malformed manifest stopping every command."""
from __future__ import annotations

from conftest import PORTS, bench, bench_env, bench_in_fork

BAD_INPUT = [
    # (arguments, extra environment, what the one line must say)
    (["run", "-f", "nope"], {}, "unknown framework 'nope'; valid: broken, fixture"),
    (["run", "-f", "fixture", "-v", "fast"], {}, "unknown variant 'fast'"),
    (["run", "-f", "fixture", "-s", "dance"], {}, "unknown scenario 'dance'; valid: plaintext"),
    (["run", "-f", "fixture", "-c", "0"], {}, "--concurrency '0'"),
    (["run", "-f", "fixture", "-c", "64,-1"], {}, "--concurrency '64,-1'"),
    (["run", "-f", "fixture", "-d", "-3s"], {}, "--duration '-3s' is not a duration"),
    (["run", "-f", "fixture", "-d", "0s"], {}, "--duration must be more than zero"),
    (["run", "-f", "fixture", "--warmup", "soon"], {}, "--warmup 'soon' is not a duration"),
    (["run", "-f", "fixture", "--server-cpus", "9"], {}, "this machine has CPUs"),
    (["run", "-f", "fixture", "--loadgen-cpus", "x"], {}, "is not a CPU list"),
    (["run", "-f", "fixture", "--heap", "lots"], {}, "--heap 'lots' must look like 512m"),
    (["run", "-f", "fixture", "--port", "40000"], {}, "ephemeral port range"),
    (["run", "-f", "fixture", "--repeat", "0"], {}, "--repeat must be 1 or more"),
    (["run", "-f", "fixture", "--runtime", "vm"], {}, "unknown runtime 'vm'; valid: process, docker"),
    (["run", "-f", "fixture", "-p", "soak"], {}, "unknown profile 'soak' (neither a shipped profile nor a "
                                                 "file); valid: burst, capacity, ramp, rate, throughput"),
    (["run", "--preset", "fastest"], {},
     "unknown preset 'fastest'; valid: capacity-at-slo, cold-start-and-spike, cpu-and-io-bursts, cpu-yield, far-database"),
    (["run", "-f", "fixture", "--quick"], {}, "--quick goes with --preset"),
    (["infra", "up", "--runtime", "docker", "--redis-port", "29379", "--db-port", "29306", "--downstream-port", "29280"],
     {"DOCKER_HOST": "ssh://bench@198.18.255.254"}, "names another machine's engine (198.18.255.254)"),
    (["run", "--preset", "redis-frameworks", "-f", "fixture"], {}, "--preset chooses the targets"),
    (["run", "-f", "fixture", "--rate", "100"], {}, "--rate does not apply to the throughput profile"),
    (["run", "-f", "fixture", "-p", "rate", "--rate", "0"], {}, "--rate '0': each must be a whole number"),
    (["run", "-f", "fixture", "-p", "burst", "--requests", "10"], {}, "--requests 10 is fewer than the largest concurrency"),
    (["run", "-f", "fixture", "-p", "ramp", "--workers", "-1"], {}, "--workers -1 must be from 0 to 64"),
    (["run", "-f", "fixture", "-p", "ramp", "--workers", "1", "--locust-master", "127.0.0.1"], {},
     "workers on other machines cannot reach this machine at 127.0.0.1"),
    (["run", "-f", "fixture", "-p", "ramp", "--workers", "1", "--locust-master", "198.51.100.7:5557"], {},
     "--locust-master 198.51.100.7 is not an address of this machine"),
    (["locust-worker", "--master", "198.18.0.1:x"], {}, "--master '198.18.0.1:x' must be IPV4-ADDRESS[:PORT]"),
    (["locust-worker", "--master", "loadmaster"], {}, "--master 'loadmaster' must be IPV4-ADDRESS[:PORT]"),
    (["locust-worker", "--master", "198.18.0.1", "--processes", "0"], {}, "--processes must be 1 or more"),
    (["run", "--resume", "no-such-run"], {}, "no run 'no-such-run'"),
    (["results", "no-such-run"], {}, "no run 'no-such-run'"),
    (["run", "-f", "fixture:ok", "--results-dir", "/dev/null/results"], {}, "results folder /dev/null/results is not writable"),
    (["run", "-f", "fixture:ok"], {"JAVA_HOME": "/nonexistent", "BENCH_JVM_DIR": "/nonexistent"},
     "no JDK 21 or newer found"),
    (["run", "-f", "fixture:ok"], {"PATH": "/nonexistent"}, "'wrk' not found: install it with `apt-get install -y wrk`"),
    (["verify", "-f", "fixture:ok", "--runtime", "docker"], {"DOCKER_HOST": "unix:///nonexistent.sock"},
     "no Docker engine answers"),
    (["verify", "-f", "fixture:ok", "--load", "0"], {}, "--load must be 1 to 20,000 connections, not 0"),
]


def test_bad_input_is_one_line_and_exit_2(results_dir, warm_command_line):
    for args, extra, message in BAD_INPUT:
        if "--results-dir" not in args and args[0] in ("run", "results"):
            args = [*args, "--results-dir", str(results_dir)]
        if args[0] in ("run", "verify"):
            args = [args[0], *PORTS[:2], *args[1:]]  # the case's own --port, if any, comes later and wins
        # each case refuses before it starts anything: in a fork of this process (milliseconds, not a
        # second of imports), but for those that set the environment, which some modules read once
        # when imported (BENCH_JVM_DIR): a process of their own
        r = bench(*args, env=bench_env(**extra)) if extra else bench_in_fork(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert message in " ".join(r.stderr.split()), (args, r.stderr)
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
    assert not list(results_dir.iterdir())


def test_a_malformed_manifest_stops_every_command(tmp_path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "framework.toml").write_text('name = "bad"\n[build\n')
    for args in (["list"], ["run", "-f", "bad"], ["verify"]):
        r = bench(*args, frameworks=tmp_path)
        assert r.returncode == 2 and "framework.toml: field '(syntax)': not valid TOML" in r.stderr, r.stderr
