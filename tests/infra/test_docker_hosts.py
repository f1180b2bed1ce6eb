"""Which DOCKER_HOST bench accepts: a local socket, loopback, ssh:// and TLS; plain TCP to another
machine only when PLAIN_TCP_VAR accepts the risk, which is then printed. No engine is contacted:
the rule is read from the variables alone, before any connection (198.18.0.0/15 addresses)."""
from __future__ import annotations

import pytest
from conftest import bench, bench_env

from orchestrator.infra.docker_engine import PLAIN_TCP_VAR, check_transport, plain_tcp_risk

ELSEWHERE = "198.18.0.1"


@pytest.mark.parametrize("environ", [
    {},
    {"DOCKER_HOST": "unix:///var/run/docker.sock"},
    {"DOCKER_HOST": "tcp://127.0.0.1:2375"},
    {"DOCKER_HOST": "tcp://localhost:2375"},
    {"DOCKER_HOST": f"ssh://bench@{ELSEWHERE}"},
    {"DOCKER_HOST": f"tcp://{ELSEWHERE}:2376", "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": "/certs"},
    {"DOCKER_HOST": f"https://{ELSEWHERE}:2376"},
])
def test_a_local_ssh_or_tls_engine_is_accepted(environ):
    assert plain_tcp_risk(environ) is None


@pytest.mark.parametrize("environ", [
    {"DOCKER_HOST": f"tcp://{ELSEWHERE}:2375"},
    {"DOCKER_HOST": f"http://{ELSEWHERE}:2375"},
    {"DOCKER_HOST": f"tcp://{ELSEWHERE}:2376", "DOCKER_TLS_VERIFY": "", "DOCKER_CERT_PATH": "/certs"},
])
def test_plain_tcp_to_another_machine_is_a_risk(environ):
    assert "plain TCP to another machine" in plain_tcp_risk(environ)


def test_plain_tcp_is_refused_in_one_line():
    refused = bench("images", "list", env=bench_env(DOCKER_HOST=f"tcp://{ELSEWHERE}:2375"))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    said = (refused.stdout + refused.stderr).strip()
    assert len(said.splitlines()) == 1 and "ssh://" in said and PLAIN_TCP_VAR in said, said


def test_plain_tcp_accepted_by_its_variable_prints_the_risk(monkeypatch, capsys):
    monkeypatch.setenv("DOCKER_HOST", f"tcp://{ELSEWHERE}:2375")
    monkeypatch.delenv("DOCKER_TLS_VERIFY", raising=False)
    monkeypatch.setenv(PLAIN_TCP_VAR, "1")
    check_transport.cache_clear()
    try:
        check_transport()
        check_transport()
    finally:
        check_transport.cache_clear()
    assert capsys.readouterr().err.count(f"warning: DOCKER_HOST=tcp://{ELSEWHERE}:2375 is plain TCP") == 1
