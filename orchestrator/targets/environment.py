"""The environment of a run: the catalog, the JDK, builds and images, Redis and MariaDB, and starting
a target (after its backend, if it is a gateway) until it answers on 127.0.0.1 (or its host's
address, in a topology of several hosts) and passes
verification. Every command that starts targets (run, verify, noise, parity) goes through it.
"""
from __future__ import annotations

import contextlib
import functools
import os
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from orchestrator import RESULTS_DIR
from orchestrator.config.catalog import Framework, Target, discover, resolve
from orchestrator.config.modes import AOT_CACHE, AOT_TRAINING
from orchestrator.config.plan import Settings, pool_env
from orchestrator.config.scenarios import Backends
from orchestrator.config.topology import LOCAL, Topology
from orchestrator.core.cpus import settle
from orchestrator.core.httpclient import request
from orchestrator.core.schema import MiB
from orchestrator.errors import BenchError, TargetFailed, UsageError
from orchestrator.infra import backends as infra_mod
from orchestrator.infra.cleanup import stale_data_dirs
from orchestrator.infra.docker_engine import address_toward, ship
from orchestrator.infra.network import Network, stale_namespaces
from orchestrator.infra.procs import ensure_port_free, server_failure
from orchestrator.targets import aot_cache, images, runtimes
from orchestrator.targets.build import build_all
from orchestrator.targets.jdk import Jdk, find_jdk
from orchestrator.targets.jvm import jvm_options
from orchestrator.targets.runtimes import LaunchSpec, Runtime, Server
from orchestrator.targets.verify import Verification, verify


@dataclass
class Started:
    server: Server
    startup_s: float
    rss_after_start_mb: float
    backend: "Started | None" = None
    launched_at: float = float("nan")   # epoch seconds of the JVM's spawn

    def stop(self, grace_s: float = 15.0) -> None:
        self.server.stop(grace_s)
        if self.backend:
            self.backend.stop()


def wait_ready(server: Server, port: int, path: str, timeout_s: float, started: float,
               host: str = "127.0.0.1") -> float:
    """Seconds from spawn to the first 200 on the health path; TargetFailed on exit or timeout."""
    while True:
        code = server.exit_code()
        if code is not None:
            raise TargetFailed(server_failure(f"exited with {code} while starting", server.log_path))
        try:
            if request(port, "GET", path, timeout=2, host=host).status == 200:
                return time.monotonic() - started
        except OSError:
            pass
        if time.monotonic() - started > timeout_s:
            raise TargetFailed(server_failure(f"no 200 on {path} within {timeout_s:.0f} s", server.log_path))
        time.sleep(0.05)


class Environment:
    """What the commands share: the catalog, the JDK, builds, images, and starting and verifying
    targets (with their backends) on free ports."""

    def __init__(self, settings: Settings, logs: Path, console: Console,
                 catalog: dict[str, Framework] | None = None, results_root: Path = RESULTS_DIR):
        self.settings = settings
        self.logs = logs
        self.results_root = results_root   # where this machine's calibration.json is read and kept
        self.console = console
        self.catalog = catalog or discover()
        self.runtime: Runtime = runtimes.get(settings.runtime, settings.memory)
        self.runtime.check()
        self.jdk: Jdk = find_jdk()
        self.kept_backends: dict[str, Started] | None = None   # keep_backends()
        self._infra: list | None = None   # the infrastructure while infra() holds it up
        self.artifacts: dict[str, Path] = {}
        self.build_failures: dict[str, str] = {}
        self.build_times: dict[str, float | None] = {}
        self.infra_images: dict[str, str] = {}
        self.topology = Topology.from_dict(settings.topology)
        self.net: Network | None = None   # the topology's hosts and links, while a run has them up

    @property
    def server_host(self) -> str:
        """The address the load generator and the probes reach the target at: its namespace's, a
        remote engine's machine's, or loopback."""
        if self.net:
            return self.net.address(self.topology.server, LOCAL)
        return self.runtime.host or "127.0.0.1"

    @property
    def local_server_cpus(self) -> str | None:
        """The server's CPUs when it runs on this machine (None on a remote engine's, out of sight here)."""
        return None if self.runtime.host else self.settings.server_cpus

    @property
    def server_netns(self) -> str | None:
        return self.net.namespace(self.topology.server) if self.net else None

    @contextlib.contextmanager
    def network(self):
        """The topology's hosts and links for the length of a run (none for one host), shaped for its
        first level; removed on every way out."""
        if self.topology.single_host:
            yield None
            return
        net = Network(self.topology, os.getpid(), cpus=self.settings.loadgen_cpus)
        net.up()
        try:
            net.shape(self.topology.levels()[0], functools.partial(settle, None))   # no server yet
            self.net = net
            yield net
        finally:
            self.net = None
            net.down()

    def load_placement(self) -> dict:
        """Where the load goes and comes from: LoadSpec's fields for the server's address (in a topology,
        or on a remote engine) and, when Locust's workers run on a host of the topology's own or on other
        machines (--locust-master), where their master waits for them."""
        out = {"host": self.server_host} if self.runtime.host or self.net else {}
        if self.settings.locust_master:
            address, port = self.settings.locust_master.split(":")
            out.update(master_host=address, master_port=int(port), workers_elsewhere=True)
        if not self.net:
            return out
        t = self.topology
        if t.workers != LOCAL:
            # the server answers at one address, which the workers' host reaches over its own link
            out.update(workers_netns=self.net.namespace(t.workers), master_host=self.net.address(LOCAL, t.workers))
        return out

    def placement(self) -> infra_mod.Placement | None:
        """Where the data services run in this run's network: for targets on a remote engine, here,
        reached over this machine's address toward that one."""
        if self.runtime.host:
            return infra_mod.Placement(serve_host=address_toward(self.runtime.host), client_host=self.runtime.host)
        if not self.net:
            return None
        t = self.topology
        return infra_mod.Placement(netns=self.net.namespace(t.data), host=self.net.address(t.data, LOCAL),
                                   serve_host=self.net.address(t.data, t.server),
                                   client_host=self.net.address(t.server, t.data))

    def frameworks_for(self, targets: list[Target]) -> list[Framework]:
        names = []
        for t in targets:
            if t.framework.backend:
                names.append(resolve(self.catalog, t.framework.backend).framework.name)
            names.append(t.framework.name)
        return [self.catalog[n] for n in dict.fromkeys(names)]

    def build_all(self, targets: list[Target], force: bool = False) -> None:
        frameworks = self.frameworks_for(targets)
        built: dict[str, Path] = {}
        with self.console.status(f"building {', '.join(fw.name for fw in frameworks)}"):
            for fw, artifact, seconds, failure in build_all(frameworks, self.jdk, self.logs, force):
                if failure:
                    self.build_failures[fw.name] = failure
                    self.console.print(f"[red]build failed[/] {fw.name}: {failure.splitlines()[0]}")
                    continue
                built[fw.name] = artifact
                self.build_times[fw.name] = seconds
                self.console.print(f"[green]built[/] {fw.name}" + (f" in {seconds:.1f} s" if seconds
                                                                 else " (up to date)"))
        # in the catalog's order, not the builds' ends: the images are made in it
        self.artifacts.update({fw.name: built[fw.name] for fw in frameworks if fw.name in built})
        if self.settings.runtime == "docker":
            self.build_images()
            if self.runtime.host:
                self.ship_images()

    def build_images(self) -> None:
        """Images for the docker runtime: the bases (bootstrapped once), then one per built artifact."""
        log = lambda msg: self.console.print(msg)  # noqa: E731
        bases = images.bases(self.jdk, self.settings.offline, log)
        self.infra_images = {"redis": bases.redis, "mariadb": bases.mariadb}
        for name in self.artifacts:
            try:
                self.runtime.images[name] = images.framework_image(self.catalog[name], bases.jre, log)
            except BenchError as e:
                self.build_failures[name] = f"image build failed: {e}"
                self.console.print(f"[red]image build failed[/] {name}: {str(e).splitlines()[0]}")

    def ship_images(self) -> None:
        """The images built here, onto the remote engine that lacks them (no registry between)."""
        for tag in self.runtime.images.values():
            with self.console.status(f"shipping {tag} to the engine at {self.runtime.host}"):
                t0 = time.monotonic()
                if ship(tag):
                    self.console.print(f"shipped {tag} to {self.runtime.host} in {time.monotonic() - t0:.1f} s")

    @contextlib.contextmanager
    def infra(self):
        """Redis, MariaDB and the downstream service for a run: on this machine (as processes when the
        targets run on a remote engine, which reaches them over the network), else in the run's runtime.
        Verification reads them while they are up."""
        s = self.settings
        runtime = "process" if self.runtime.host else s.runtime
        with infra_mod.for_run(s.redis_port, s.db_port, s.loadgen_cpus, runtime=runtime, images=self.infra_images,
                               placement=self.placement(), downstream_port=s.downstream_port,
                               downstream_ms=s.downstream_ms) as holder:
            self._infra = holder
            try:
                yield holder
            finally:
                self._infra = None

    def _launch(self, target: Target, port: int, cpus: str, env: dict[str, str], run_id: str) -> Started:
        server, t0 = self._spawn(target, port, cpus, cpus, env, run_id)
        return self._ready(target, server, port, t0)

    @property
    def run_dir(self) -> Path:
        """The run's folder (its logs/ are in it)."""
        return self.logs.parent

    def _spawn(self, target: Target, port: int, cpus: str, processors: str, env: dict[str, str],
               run_id: str) -> tuple[Server, float]:
        """The target's JVM spawned on cpus, sized for as many CPUs as `processors` lists; not awaited.
        Its JVM mode's options (aot_cache.py; in AOT_TRAINING, those of its cache's training run) come
        after every target's own."""
        fw = target.framework
        if fw.name in self.build_failures:
            raise TargetFailed(self.build_failures[fw.name])
        try:
            if not self.server_netns and not self.runtime.host:
                ensure_port_free(port, target.id)
        except UsageError as e:
            raise TargetFailed(str(e)) from None
        s = self.settings
        log_path = self.logs / f"{target.slug}-{run_id}.log"
        # a class loading log the orchestrator reads, in a run that compares JVM modes, there before the JVM for a
        # container to mount. None for a training run: the child JVM that assembles its cache inherits its options,
        # and would write over it.
        training = target.jvm_mode == AOT_TRAINING
        class_log = aot_cache.class_log_of(log_path) if AOT_CACHE in s.jvm_modes and not training else None
        if class_log:
            class_log.touch()
        mode_opts, mounts = aot_cache.jvm_options(target, self.run_dir, class_log, self.runtime.path)
        opts = [*jvm_options(target, target.heap(s.heap), processors), *mode_opts]
        spec = LaunchSpec(
            target=target, artifact=self.artifacts[fw.name], jvm_opts=opts,
            env={**env, **pool_env(s, target), "PORT": str(port), "BIND_ADDRESS": self.server_host},
            port=port, cpus=cpus, heap=target.heap(s.heap),
            log_path=log_path,
            labels={"bench.run": run_id, "bench.target": target.id}, netns=self.server_netns, mounts=mounts)
        t0 = time.monotonic()
        return self.runtime.start(spec, self.jdk.java), t0

    def _ready(self, target: Target, server: Server, port: int, t0: float) -> Started:
        """The spawned target once it answers on its health path and listens nowhere it must not;
        stopped, and TargetFailed, otherwise."""
        host = self.server_host
        try:
            startup = wait_ready(server, port, target.framework.health_path, self.settings.start_timeout_s, t0, host)
            usage = server.usage_after(time.time())
            exposed = server.listeners_beyond([host], bool(self.server_netns))
            if exposed:
                raise TargetFailed(f"listens beyond {host} on {', '.join(exposed)}: every listener must "
                                   f"bind BIND_ADDRESS (see frameworks/CONTRACT.md)")
        except BaseException:
            server.stop()
            raise
        return Started(server, startup, usage.rss_bytes / MiB if usage else float("nan"),
                       launched_at=time.time() - (time.monotonic() - t0))

    def start(self, target: Target, env: dict[str, str], run_id: str) -> Started:
        """Start the target (after its backend, if it has one) and wait until it answers."""
        s = self.settings
        backend = None
        env = dict(env)
        if target.framework.backend:
            # The backend is fixed scenery, not the subject: it runs beside the infrastructure.
            backend = self._backend(resolve(self.catalog, target.framework.backend), env, run_id)
            env["BACKEND_URL"] = self._backend_url()
        try:
            started = self._launch(target, s.port, s.server_cpus, env, run_id)
        except BaseException:
            if backend and self.kept_backends is None:
                backend.stop()
            raise
        started.backend = backend if self.kept_backends is None else None
        return started

    def _backend(self, backend: Target, env: dict[str, str], run_id: str) -> Started:
        """A fresh backend for each target of a run (each measured against one as fresh as the
        others'); with keep_backends, the one already up while it still runs."""
        kept = (self.kept_backends or {}).get(backend.id)
        if kept and kept.server.exit_code() is None:
            return kept
        if kept:
            kept.stop()   # it died under the last gateway's load: reaped, and a fresh one started
        started = self._launch(backend, self.settings.port + 1, self.settings.loadgen_cpus, env, run_id)
        if self.kept_backends is not None:
            self.kept_backends[backend.id] = started
        return started

    @contextlib.contextmanager
    def keep_backends(self):
        """One backend for the gateways it serves until the block ends (verification: nothing of it is
        measured, and each start of Spring WebFlux took 7 s here), then stopped."""
        self.kept_backends = {}
        try:
            yield
        finally:
            for started in self.kept_backends.values():
                started.stop()
            self.kept_backends = None

    def cleanup_leftovers(self) -> list[str]:
        """What killed runs left: containers (docker runtime), infrastructure data directories and
        network namespaces."""
        return self.runtime.cleanup_leftovers() + stale_data_dirs() + stale_namespaces()

    def check_ports(self, targets: list[Target], shared_infra: bool) -> None:
        """Before anything starts: every port the run will listen on must be free (UsageError)."""
        s = self.settings
        if not self.topology.single_host:
            return   # the target and the data services listen in namespaces of their own
        if not self.runtime.host:   # else the targets listen on the remote engine's machine
            ensure_port_free(s.port, "the target")
            if any(t.framework.backend for t in targets):
                ensure_port_free(s.port + 1, "the gateway's backend")
        if not shared_infra:
            ensure_port_free(s.redis_port, "Redis")
            ensure_port_free(s.db_port, "MariaDB")
            ensure_port_free(s.downstream_port, "the downstream service")

    def start_verified(self, target: Target, env: dict[str, str], run_id: str,
                       tag: str) -> tuple[Started, Verification]:
        """Start the target and check every scenario against the contract (verify.py); what the check
        saw goes to logs/verify-<target>-<tag>.txt. A target that fails the check is stopped."""
        return self._verified(target, self.start(target, env, run_id), self.settings.port, tag)

    def _verified(self, target: Target, started: Started, port: int, tag: str, own_cpus: bool = True,
                  timed_only: bool = False) -> tuple[Started, Verification]:
        try:
            up = self._infra
            backends = Backends(up[0], int(pool_env(self.settings, target)["CACHE_TTL_S"]), own_cpus) \
                if up else None
            v = verify(target, port, self.server_host, backends, timed_only)
        except BaseException:
            started.stop()
            raise
        (self.logs / f"verify-{target.slug}-{tag}.txt").write_text(
            f"{'ok' if v.ok else v.reason}\nthreads: {v.threads}\nheaders: {v.headers}\n")
        if not v.ok:
            started.stop()
        return started, v

    def _kept_backend(self, target: Target) -> Started | None:
        kept = (self.kept_backends or {}).get(resolve(self.catalog, target.framework.backend).id)
        return kept if kept and kept.server.exit_code() is None else None

    @property
    def starts_beside(self) -> bool:
        """Whether a target can start on the load generator's CPUs while another target is loaded,
        and move to the server's when its turn comes: local processes on one host."""
        return self.runtime.name == "process" and self.topology.single_host

    def can_start_beside(self, target: Target) -> bool:
        """starts_beside, for a target whose backend (if it has one) is up already."""
        return self.starts_beside and (not target.framework.backend or self._kept_backend(target) is not None)

    def _backend_url(self) -> str:
        return f"http://{self.server_host}:{self.settings.port + 1}"

    def spawn_beside(self, target: Target, env: dict[str, str], run_id: str, port: int) -> tuple[Server, float]:
        """The target's JVM spawned on the load generator's CPUs on port (sized for the server's CPUs,
        as every target is); ready_beside() waits for it, from any thread. Spawned here, in the
        caller's thread: a child dies with the thread that spawned it (PR_SET_PDEATHSIG)."""
        s = self.settings
        if target.framework.backend:
            env = {**env, "BACKEND_URL": self._backend_url()}
        return self._spawn(target, port, s.loadgen_cpus, s.server_cpus, env, run_id)

    def ready_beside(self, target: Target, server: Server, port: int, t0: float,
                     tag: str) -> tuple[Started, Verification]:
        """A target spawned beside (spawn_beside), once ready and checked as start_verified checks, but
        for the checks that read timing: its CPUs are shared with the load (verified_moved does them)."""
        return self._verified(target, self._ready(target, server, port, t0), port, tag, own_cpus=False)

    def verified_moved(self, target: Target, started: Started, port: int, tag: str) -> Verification:
        """A target started beside, once moved to the server's CPUs: the checks ready_beside left out
        (the target is stopped if they fail)."""
        return self._verified(target, started, port, f"{tag}-moved", timed_only=True)[1]
