"""The Docker engine: one client, and a clear line when none answers."""
from __future__ import annotations

import functools

from .errors import MissingTool

HOW = ("install it with `apt-get install -y docker.io` and start it with "
       "`dockerd --iptables=false --bridge=none &` (or point DOCKER_HOST at an engine)")
LABEL_OWNER = "bench.owner"
LABEL_RUN = "bench.run"
LABEL_TARGET = "bench.target"


@functools.lru_cache(maxsize=1)
def client():
    """A client for the engine in DOCKER_HOST (default: the local socket); the API version is negotiated."""
    try:
        import docker
    except ImportError:
        raise MissingTool("the Docker SDK is missing: `pip install docker` (python3 -m orchestrator installs it)") from None
    try:
        c = docker.from_env(timeout=120)
        c.ping()
        return c
    except Exception as e:  # noqa: BLE001 - any failure here means "no engine"
        raise MissingTool(f"no Docker engine answers ({type(e).__name__}); {HOW}") from None
