"""The Docker engine: one client, a clear line when none answers, and the one way bench starts a
container (targets, Redis, MariaDB): host network, a non-root user, pinned CPUs, labels.

DOCKER_HOST may name another machine's engine (tcp:// or ssh://): the targets then run on that
machine while the load, Redis and MariaDB stay on this one, and the images, built here, are
shipped to it (no registry is needed)."""
from __future__ import annotations

import functools
import ipaddress
import os
import socket
import urllib.parse
from dataclasses import asdict

from orchestrator.errors import MissingTool, UsageError
from orchestrator.infra import round_trip
from orchestrator.infra.procs import Owner

HOW = ("install it with `apt-get install -y docker.io` and start it with "
       "`dockerd --iptables=false --bridge=none &` (or point DOCKER_HOST at an engine)")
LABEL_OWNER = "bench.owner"   # the owner's pid (filters match it); bench.owner.<field>: the rest of its procs.Owner
LABEL_RUN = "bench.run"
LABEL_TARGET = "bench.target"


def owner_labels(outlive: bool = False) -> dict[str, str]:
    """The labels that say which bench process, on which host and checkout, a container belongs to."""
    owner = asdict(Owner.me(outlive))
    return {LABEL_OWNER: owner.pop("pid"), **{f"{LABEL_OWNER}.{k}": v for k, v in owner.items()}}


def labelled_owner(labels: dict[str, str]) -> Owner | None:
    """The procs.Owner of a container from its labels; None for one of an older bench."""
    return Owner.parse({"pid": labels.get(LABEL_OWNER),
                        **{k[len(LABEL_OWNER) + 1:]: v for k, v in labels.items() if k.startswith(LABEL_OWNER + ".")}})


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
        c = docker.from_env(timeout=120, use_ssh_client=True)   # ssh:// through the system's ssh
        c.ping()
        return c
    except Exception as e:  # noqa: BLE001 - any failure here means "no engine"
        raise MissingTool(f"no Docker engine answers ({type(e).__name__}); {HOW}") from None


@functools.lru_cache(maxsize=1)
def remote_address() -> str | None:
    """The address of the machine whose engine DOCKER_HOST names, when that is not this machine;
    None for a local socket or a loopback address."""
    url = os.environ.get("DOCKER_HOST", "")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("tcp", "ssh", "http", "https") or not parts.hostname:
        return None
    try:
        address = socket.gethostbyname(parts.hostname)
    except OSError:
        raise UsageError(f"DOCKER_HOST={url}: {parts.hostname} does not resolve") from None
    return None if ipaddress.ip_address(address).is_loopback else address


def engine_port() -> int:
    """The TCP port the remote engine answers on (its API, or ssh's), for round-trip probes."""
    parts = urllib.parse.urlsplit(os.environ.get("DOCKER_HOST", ""))
    return parts.port or {"ssh": 22, "https": 2376}.get(parts.scheme, 2375)


def address_toward(address: str) -> str:
    """This machine's address on the route to address (a UDP socket's connect sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((address, 9))
        return s.getsockname()[0]


def describe_remote() -> dict | None:
    """run.json's record of the remote engine's machine (None when the engine is this machine's):
    what the engine reports of it and the round trip to it, probed now."""
    address = remote_address()
    if not address:
        return None
    info = client().info()
    return {"docker_host": os.environ["DOCKER_HOST"], "address": address, "this_machine": address_toward(address),
            "name": info.get("Name"), "cpus": info.get("NCPU"), "memory_gb": round(info.get("MemTotal", 0) / 2**30, 1),
            "kernel": info.get("KernelVersion"), "os": info.get("OperatingSystem"),
            "engine_version": info.get("ServerVersion"),
            "rtt_ms": round_trip.probe(address, engine_port(), what="the remote engine")["median_ms"]}


@functools.lru_cache(maxsize=1)
def local_client():
    """The engine on this machine's own socket, or None: where images are built for a remote engine."""
    import docker
    try:
        c = docker.DockerClient(base_url="unix:///var/run/docker.sock", timeout=120)
        c.ping()
        return c
    except Exception:  # noqa: BLE001 - none here: a remote engine then builds its images itself
        return None


def builder():
    """The engine images are built on: this machine's when DOCKER_HOST names a remote one and this
    machine has an engine too (the images are then shipped), else the run's."""
    return (remote_address() and local_client()) or client()


def ship(tag: str) -> bool:
    """Copy an image built here to the remote engine if it lacks it; True when one was copied."""
    import docker.errors
    source, target = builder(), client()
    if source is target:
        return False
    try:
        target.images.get(tag)
        return False
    except docker.errors.ImageNotFound:
        pass
    target.images.load(source.images.get(tag).save(named=True))
    return True


def run_container(image: str, argv: list[str], *, cpus: str, labels: dict[str, str], **options):
    """Start a detached container of image on the host network (servers bind 127.0.0.1), as USER,
    on cpus; options are the SDK's (name, environment, volumes, mem_limit, working_dir...)."""
    return client().containers.run(image, argv, detach=True, network_mode="host", user=USER, cpuset_cpus=cpus,
                                   labels=labels, **options)
