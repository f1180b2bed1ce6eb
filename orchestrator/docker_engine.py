"""The Docker engine: one client, a clear line when none answers, and the one way bench starts a
container (targets, Redis, MariaDB): host network, a non-root user, pinned CPUs, labels."""
from __future__ import annotations

import functools

from .errors import MissingTool

HOW = ("install it with `apt-get install -y docker.io` and start it with "
       "`dockerd --iptables=false --bridge=none &` (or point DOCKER_HOST at an engine)")
LABEL_OWNER = "bench.owner"
LABEL_RUN = "bench.run"
LABEL_TARGET = "bench.target"
# Every container runs as this user (a named one in the target images: the JVM publishes its
# hsperfdata counters only for a user with a name); data directories mounted in are chowned to it.
USER_ID = 10001
USER = f"{USER_ID}:{USER_ID}"


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


def run_container(image: str, argv: list[str], *, cpus: str, labels: dict[str, str], **options):
    """Start a detached container of image on the host network (servers bind 127.0.0.1), as USER,
    on cpus; options are the SDK's (name, environment, volumes, mem_limit, working_dir...)."""
    return client().containers.run(image, argv, detach=True, network_mode="host", user=USER, cpuset_cpus=cpus,
                                   labels=labels, **options)
