"""The Docker engine: one client, a clear line when none answers, and the one way bench starts a
container (targets, Redis, MariaDB): host network, a non-root user, pinned CPUs, labels.

DOCKER_HOST may name another machine's engine, over ssh:// (the system's ssh) or TLS (tcp://...:2376
with DOCKER_TLS_VERIFY and DOCKER_CERT_PATH, as the docker CLI reads them): the targets then run on
that machine while the load, Redis and MariaDB stay on this one, and the images, built here, are
shipped to it (no registry is needed). Plain TCP to another machine is refused unless
PLAIN_TCP_VAR accepts its risk (docs/docker.md)."""
from __future__ import annotations

import functools
import ipaddress
import os
import socket
import sys
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
PLAIN_TCP_VAR = "BENCH_DOCKER_PLAIN_TCP"   # "1": accept plain TCP to another machine's engine


def _address(url: str) -> str | None:
    """The IPv4 address of the machine DOCKER_HOST's url names, or None for a local socket."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("tcp", "ssh", "http", "https") or not parts.hostname:
        return None
    try:
        return socket.gethostbyname(parts.hostname)
    except OSError:
        raise UsageError(f"DOCKER_HOST={url}: {parts.hostname} does not resolve") from None


def plain_tcp_risk(environ) -> str | None:
    """What is wrong with environ's DOCKER_HOST, or None: plain TCP (tcp:// or http:// without
    DOCKER_TLS_VERIFY) to an engine beyond this machine's loopback, which has no authentication at
    all: whoever reaches its port is root on its machine, and the API carries the targets'
    environment (the infrastructure's passwords) in clear."""
    url = environ.get("DOCKER_HOST", "")
    tls = environ.get("DOCKER_TLS_VERIFY", "") != ""   # as the docker CLI and SDK read it: set and not empty
    if urllib.parse.urlsplit(url).scheme not in ("tcp", "http") or tls:
        return None
    address = _address(url)
    if address is None or ipaddress.ip_address(address).is_loopback:
        return None
    return (f"DOCKER_HOST={url} is plain TCP to another machine: no authentication, so whoever reaches that "
            f"port is root there, and the targets' passwords cross the network in clear")


@functools.lru_cache(maxsize=1)
def check_transport() -> None:
    """Refuse plain TCP to another machine's engine (plain_tcp_risk) unless PLAIN_TCP_VAR=1, which
    prints the risk once."""
    risk = plain_tcp_risk(os.environ)
    if risk is None:
        return
    if os.environ.get(PLAIN_TCP_VAR) != "1":
        raise UsageError(f"{risk}; use ssh://USER@HOST or TLS on 2376 (DOCKER_TLS_VERIFY=1, DOCKER_CERT_PATH; "
                         f"docs/docker.md), or set {PLAIN_TCP_VAR}=1 to take that risk")
    print(f"warning: {risk} ({PLAIN_TCP_VAR}=1)", file=sys.stderr)


def connect(environment: dict[str, str] | None = None, timeout: int = 120):
    """A client for the engine that environment's DOCKER_HOST, DOCKER_TLS_VERIFY and DOCKER_CERT_PATH
    name (default: this process's), as the docker CLI reads them; ssh:// goes through the system's
    ssh. Not through requests' environment: REQUESTS_CA_BUNDLE (set on many machines) would replace
    the engine's CA from DOCKER_CERT_PATH, and every TLS handshake would fail."""
    try:
        import docker
    except ImportError:
        raise MissingTool("the Docker SDK is missing: `pip install docker` (python3 -m orchestrator installs it)") from None
    # Made with the oldest API version, which asks the engine nothing, so that trust_env is off
    # before the first request; then the version is negotiated as from_env would.
    c = docker.from_env(environment=environment, timeout=timeout, use_ssh_client=True,
                        version=docker.constants.MINIMUM_DOCKER_API_VERSION)
    c.api.trust_env = False
    c.api._version = c.api._retrieve_server_version()
    return c


@functools.lru_cache(maxsize=1)
def client():
    """A client for the engine in DOCKER_HOST (default: the local socket); the API version is negotiated."""
    check_transport()
    try:
        c = connect()
        c.ping()
        return c
    except MissingTool:
        raise
    except Exception as e:  # noqa: BLE001 - any failure here means "no engine"
        raise MissingTool(f"no Docker engine answers ({type(e).__name__}); {HOW}") from None


@functools.lru_cache(maxsize=1)
def remote_address() -> str | None:
    """The address of the machine whose engine DOCKER_HOST names, when that is not this machine;
    None for a local socket or a loopback address."""
    check_transport()
    address = _address(os.environ.get("DOCKER_HOST", ""))
    return None if address is None or ipaddress.ip_address(address).is_loopback else address


def engine_port() -> int:
    """The TCP port the remote engine answers on (its API, or ssh's), for round-trip probes."""
    parts = urllib.parse.urlsplit(os.environ.get("DOCKER_HOST", ""))
    tls = parts.scheme == "https" or os.environ.get("DOCKER_TLS_VERIFY", "") != ""
    return parts.port or (22 if parts.scheme == "ssh" else 2376 if tls else 2375)


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
