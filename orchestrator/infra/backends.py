"""Shared infrastructure: Redis and MariaDB from Debian's packages, as local processes or containers,
and the downstream service (downstream.py: nginx, a local process in either runtime).

Each start gets fresh data directories under /tmp, ports on 127.0.0.1 only, and a generated
password that travels only through the targets' environment (and, for `bench infra up`, a
0600 state file so that later commands can reach the same servers).
"""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

from orchestrator import REPO_ROOT, STATE_DIR
from orchestrator.config.items import REDIS_SEED, SEED_ROWS
from orchestrator.core import downstream_api
from orchestrator.errors import BenchError, UsageError
from orchestrator.infra import downstream, lockdown
from orchestrator.infra.docker_engine import USER_ID, client, owner_labels, run_container
from orchestrator.infra.procs import Owner, as_user, ensure_port_free, listening_beyond, log_tail, require_tool, spawn, stop_pids
from orchestrator.infra.tools import build_of, compiled

APT_LINE = "apt-get install -y redis-server mariadb-server"
STATE_FILE = STATE_DIR / "infra.json"
DB_NAME = DB_USER = "bench"
# The schema and seed rows, one file for the orchestrator and for Compose (compose/infra.yml).
SEED_SQL = REPO_ROOT / "compose" / "seed.sql"


def seed_statements() -> list[str]:
    """The statements of seed.sql, comments left out; each may run again (IF NOT EXISTS, IGNORE)."""
    text = "\n".join(line for line in SEED_SQL.read_text().splitlines() if not line.lstrip().startswith("--"))
    return [st.strip() for st in text.split(";") if st.strip()]
OWNER_FILE = "owner"   # in each data directory: the mark of the bench process it belongs to (procs.Owner)


@dataclass(frozen=True)
class Placement:
    """Where the data services run (network.py): on this machine's loopback, or in a network
    namespace, reached by the orchestrator at `host` and by the targets at `serve_host`, which sees
    the targets' connections come from `client_host` (the database user's host)."""
    netns: str | None = None
    host: str = "127.0.0.1"
    serve_host: str = "127.0.0.1"
    client_host: str = "127.0.0.1"

    def binds(self) -> list[str]:
        return list(dict.fromkeys(["127.0.0.1", self.host, self.serve_host]))


@dataclass
class Infra:
    """A running Redis and MariaDB: where they listen, how to log in, which processes they are."""
    redis_port: int
    db_port: int
    password: str
    data_dir: str
    cpus: str | None = None
    pids: dict[str, int] = field(default_factory=dict)        # host PIDs, also of containers' servers
    runtime: str = "process"
    containers: dict[str, str] = field(default_factory=dict)  # docker runtime: container ids
    images: dict[str, str] = field(default_factory=dict)      # docker runtime: redis, mariadb images
    placement: Placement = field(default_factory=Placement)
    downstream_port: int = 0                                  # 0: no downstream service (an old state file)
    downstream_ms: int = downstream_api.DEFAULT_MS

    def __post_init__(self):
        if isinstance(self.placement, dict):   # read back from the state file
            self.placement = Placement(**self.placement)

    def env(self) -> dict[str, str]:
        """The contract's environment for a target."""
        host = self.placement.serve_host
        return {"REDIS_HOST": host, "REDIS_PORT": str(self.redis_port), "REDIS_PASSWORD": self.password,
                "DB_HOST": host, "DB_PORT": str(self.db_port), "DB_NAME": DB_NAME,
                "DB_USER": DB_USER, "DB_PASSWORD": self.password,
                **({"DOWNSTREAM_URL": f"http://{host}:{self.downstream_port}"} if self.downstream_port else {})}

    @property
    def socket(self) -> str:
        return str(Path(self.data_dir) / lockdown.SERVER_DIR / "mariadb.sock")

    def redis_client(self, timeout: float = 2.0):
        """The orchestrator's own connection to Redis (seeding, sampling)."""
        import redis
        return redis.Redis(host=self.placement.host, port=self.redis_port, password=self.password,
                           socket_timeout=timeout)

    def db_root(self, timeout: float = 2.0, read_timeout: float | None = None):
        """The orchestrator's own connection to MariaDB: root, over the socket (seeding, resets, sampling).
        No read timeout unless asked: a reset may delete every row a long db-write run added."""
        import pymysql
        return pymysql.connect(unix_socket=self.socket, user="root", connect_timeout=timeout, read_timeout=read_timeout,
                               autocommit=True)

    def dead(self) -> list[str]:
        """Names of the servers that no longer run."""
        return [name for name, pid in self.pids.items() if not _alive(pid)]


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


class _Processes:
    """Servers as local processes. As root, mariadbd runs as Debian's `mysql` user, and as root only on
    a machine without that user."""

    def __init__(self, infra: Infra, outlive: bool):
        self.infra, self.outlive = infra, outlive
        as_root = os.geteuid() == 0
        self.db_account = lockdown.mysql_account() if as_root else None   # who owns mariadbd's files
        self.db_user = ("mysql" if self.db_account else "root") if as_root else None

    def as_db_user(self, argv: list[str]) -> list[str]:
        """mariadbd's command line as its user. setpriv drops root before mariadbd starts, and then sets
        the parent-death signal again: the kernel clears it on a change of user, so mariadbd's own --user
        would let it outlive a killed bench. As root on a machine without `mysql`, mariadbd wants --user=root."""
        if self.db_user == "root":
            return [*argv, "--user=root"]
        return as_user(argv, self.db_user, self.db_user, self.outlive) if self.db_user else argv

    def run_once(self, name: str, argv: list[str], log: Path) -> int:
        with open(log, "ab") as out:
            return subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode

    def start(self, name: str, argv: list[str], log: Path):
        proc = spawn(argv, log_path=log, cpus=self.infra.cpus, outlive_parent=self.outlive,
                     netns=self.infra.placement.netns)
        self.infra.pids[name] = proc.pid
        return lambda: proc.poll() is not None


class _Containers:
    """Servers as containers: host network, the data directory mounted at the same path, a non-root user."""
    db_account = (USER_ID, USER_ID)

    def __init__(self, infra: Infra, outlive: bool):
        self.infra = infra
        self.labels = {**owner_labels(outlive), "bench.infra": infra.data_dir}
        os.chown(infra.data_dir, USER_ID, USER_ID)

    @staticmethod
    def as_db_user(argv: list[str]) -> list[str]:
        """The image runs its servers as its own user already."""
        return argv

    def _run(self, server: str, argv: list[str], **options):
        d = self.infra.data_dir
        return run_container(self.infra.images[server], argv, cpus=self.infra.cpus, labels=self.labels,
                             volumes={d: {"bind": d, "mode": "rw"}}, **options)

    def run_once(self, name: str, argv: list[str], log: Path) -> int:
        c = self._run(name, argv)
        code = c.wait().get("StatusCode", 1)
        with open(log, "ab") as out:
            out.write(c.logs())
        c.remove(force=True)
        return code

    def start(self, name: str, argv: list[str], log: Path):
        c = self._run(name, argv, name=f"bench-{name}-{os.getpid()}-{Path(self.infra.data_dir).name[-8:]}")
        c.reload()
        self.infra.containers[name] = c.id
        self.infra.pids[name] = c.attrs["State"]["Pid"]

        def exited() -> bool:
            c.reload()
            if c.status != "running":
                log.write_bytes(c.logs())
                return True
            return False
        return exited


def _wait_for(check, what: str, log: Path, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            return check()
        except Exception as e:  # noqa: BLE001 - any failure means "not ready yet"
            last = e
            time.sleep(0.1)
    raise BenchError(f"{what} did not become ready in {timeout:.0f} s ({last}); last lines of {log}:\n{log_tail(log)}")


def _start_redis(infra: Infra, launcher) -> None:
    exe = "redis-server" if infra.runtime == "docker" else require_tool("redis-server", APT_LINE)
    d = Path(infra.data_dir)
    conf = d / "redis.conf"
    # The password goes in a 0600 file, not on the command line where `ps` would show it.
    # set-proc-title no: a retitled Redis overwrites its command line and environment, and with them
    # the marks (BENCH_OWNER, the data directory) that tell `bench clean` whose server it is.
    conf.write_text(f"port {infra.redis_port}\nbind {' '.join(infra.placement.binds())}\nprotected-mode yes\n"
                    f"dir {d}\nsave \"\"\n"
                    f"appendonly no\nset-proc-title no\n{lockdown.redis_settings(infra.password)}")
    conf.chmod(0o600)
    if infra.runtime == "docker":
        os.chown(conf, USER_ID, USER_ID)
    log = d / "redis.log"
    exited = launcher.start("redis", [exe, str(conf)], log)

    def seeded():
        if exited():
            raise BenchError("redis-server exited")
        r = infra.redis_client()
        r.mset(REDIS_SEED)
        r.close()
    _wait_for(seeded, "Redis", log, 20)


def _start_mariadb(infra: Infra, launcher) -> None:
    docker = infra.runtime == "docker"
    install_db = "mariadb-install-db" if docker else require_tool("mariadb-install-db", APT_LINE)
    server = "mariadbd" if docker else require_tool("mariadbd", APT_LINE)
    d = Path(infra.data_dir)
    datadir = d / "mariadb"
    log = d / "mariadb.log"
    own = lockdown.server_folder(d, launcher.db_account)
    install = [install_db, "--no-defaults", "--datadir={out}", "--auth-root-authentication-method=normal",
               "--skip-test-db"]
    if docker:
        rc = launcher.run_once("mariadb", [a.replace("{out}", str(datadir)) for a in install], log)
        if rc != 0:
            raise BenchError(f"mariadb-install-db failed (exit {rc}); last lines of {log}:\n{log_tail(log)}")
    else:
        # Its system tables as mariadb-install-db writes them, made once per MariaDB build (and these
        # options) and copied for each start: the install took 2.3 s of CPU at each start here, the
        # copy 0.06 s.
        shutil.copytree(compiled("mariadb-datadir", Path(install_db).resolve(), install,
                                 extra_key=build_of(server) + " ".join(install)), datadir)
        lockdown.own_tree(datadir, launcher.db_account)
    argv = [server, "--no-defaults", f"--datadir={datadir}", f"--socket={infra.socket}",
            f"--port={infra.db_port}", f"--bind-address={','.join(infra.placement.binds())}",
            *lockdown.mariadb_options(own), "--skip-name-resolve", "--max-connections=1000",
            # Commits are written to the log at once but flushed to disk once a second: the
            # db-write scenario then measures the framework and the database, not the disk.
            "--innodb-flush-log-at-trx-commit=2", "--innodb-buffer-pool-size=256M"]
    exited = launcher.start("mariadb", launcher.as_db_user(argv), log)

    def seeded():
        if exited():
            raise BenchError("mariadbd exited")
        with _root_cursor(infra) as c:
            for statement in seed_statements():
                c.execute(statement)
            client = infra.placement.client_host
            c.execute(f"CREATE USER IF NOT EXISTS '{DB_USER}'@'{client}' IDENTIFIED BY %s", (infra.password,))
            c.execute(f"GRANT {lockdown.APP_PRIVILEGES} ON {DB_NAME}.item TO '{DB_USER}'@'{client}'")
    _wait_for(seeded, "MariaDB", log, 60)


@contextlib.contextmanager
def _root_cursor(infra: Infra):
    conn = infra.db_root()
    try:
        with conn.cursor() as c:
            yield c
    finally:
        conn.close()


def reset_db(infra: Infra) -> int:
    """Back to the seed: the rows db-write added are deleted and ids start after the seed again, so
    that no target reads or writes a table another target grew. Returns the rows removed."""
    with _root_cursor(infra) as c:
        c.execute(f"USE {DB_NAME}")
        removed = c.execute(f"DELETE FROM item WHERE id > {SEED_ROWS}")
        c.execute(f"ALTER TABLE item AUTO_INCREMENT = {SEED_ROWS + 1}")
    return removed


def start(redis_port: int, db_port: int, cpus: str | None, outlive: bool = False,
          runtime: str = "process", images: dict[str, str] | None = None,
          placement: Placement | None = None, downstream_port: int = downstream_api.DEFAULT_PORT,
          downstream_ms: int = downstream_api.DEFAULT_MS) -> Infra:
    """Start and seed Redis and MariaDB (processes, or containers of `images`; in a namespace when
    placed there) and the downstream service; on failure, stop them."""
    placement = placement or Placement()
    if not placement.netns:
        ensure_port_free(redis_port, "Redis")
        ensure_port_free(db_port, "MariaDB")
        ensure_port_free(downstream_port, "the downstream service")
    infra = Infra(redis_port=redis_port, db_port=db_port, password=secrets.token_urlsafe(18),
                  data_dir=tempfile.mkdtemp(prefix="bench-infra-"), cpus=cpus, runtime=runtime,
                  images=dict(images or {}), placement=placement, downstream_port=downstream_port,
                  downstream_ms=downstream_ms)
    launcher = (_Containers if runtime == "docker" else _Processes)(infra, outlive)
    try:
        (Path(infra.data_dir) / OWNER_FILE).write_text(Owner.me(outlive).mark())
        _start_redis(infra, launcher)
        _start_mariadb(infra, launcher)
        infra.pids["downstream"] = downstream.start(Path(infra.data_dir), downstream_port, placement.binds(),
                                                    downstream_ms, cpus, placement.netns, outlive, placement.host)
        exposed = {name: listening_beyond(pid, placement.binds(), bool(placement.netns))
                   for name, pid in infra.pids.items()}
        exposed = {k: v for k, v in exposed.items() if v}
        if exposed:
            raise BenchError(f"infrastructure listens beyond {', '.join(placement.binds())}: {exposed}")
    except BaseException:
        stop(infra)
        raise
    return infra


def stop(infra: Infra) -> None:
    if infra.containers:
        for cid in infra.containers.values():
            try:
                client().containers.get(cid).remove(force=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        infra.containers.clear()
        if "downstream" in infra.pids:   # a local process in either runtime
            stop_pids([infra.pids["downstream"]], grace=5)
    else:
        stop_pids(infra.pids.values(), grace=10)
    infra.pids.clear()
    shutil.rmtree(infra.data_dir, ignore_errors=True)


def restart(infra: Infra) -> Infra:
    """Replace a dead or half-dead infrastructure with a fresh one on the same ports."""
    stop(infra)
    return start(infra.redis_port, infra.db_port, infra.cpus, runtime=infra.runtime, images=infra.images,
                 placement=infra.placement, downstream_port=infra.downstream_port, downstream_ms=infra.downstream_ms)


# --- `bench infra up|down|status`: infrastructure that outlives one command ---

def save_state(infra: Infra) -> None:
    STATE_DIR.mkdir(exist_ok=True)
    tmp = STATE_FILE.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(asdict(infra), f)
    os.replace(tmp, STATE_FILE)


def load_state() -> Infra | None:
    """The infrastructure `bench infra up` left running, or None (a stale state file is removed)."""
    if not STATE_FILE.exists():
        return None
    try:
        infra = Infra(**json.loads(STATE_FILE.read_text()))
    except (ValueError, TypeError):
        STATE_FILE.unlink()
        return None
    if infra.dead():
        stop(infra)
        STATE_FILE.unlink()
        return None
    return infra


def clear_state() -> None:
    STATE_FILE.unlink(missing_ok=True)


@contextlib.contextmanager
def for_run(redis_port: int, db_port: int, cpus: str | None, runtime: str = "process",
            images: dict[str, str] | None = None, placement: Placement | None = None,
            downstream_port: int = downstream_api.DEFAULT_PORT, downstream_ms: int = downstream_api.DEFAULT_MS):
    """The infrastructure a run uses: the one `bench infra up` started (on this machine's loopback,
    so not for a run that places the data services elsewhere or serves a remote target), or its
    own, stopped at the end.

    Yields a one-element list so that a run can swap in a restarted infrastructure.
    """
    shared = load_state() if (placement or Placement()) == Placement() else None
    if shared is not None:
        if shared.downstream_ms != downstream_ms or not shared.downstream_port:
            has = f"a {shared.downstream_ms}-ms downstream" if shared.downstream_port else "no downstream service"
            raise UsageError(f"the infrastructure of `bench infra up` has {has}, this run asks for a {downstream_ms}-ms "
                             f"downstream: run with --downstream-ms {shared.downstream_ms}, or `bench infra down` first")
        yield [shared]
        return
    holder = [start(redis_port, db_port, cpus, runtime=runtime, images=images, placement=placement,
                    downstream_port=downstream_port, downstream_ms=downstream_ms)]
    try:
        yield holder
    finally:
        stop(holder[0])
