"""The embedded infrastructure: real redis-server and mariadbd, seeded, on 127.0.0.1 only."""
from __future__ import annotations

from pathlib import Path

import psutil
import pymysql
import pytest
import redis

from orchestrator.config.items import SEED_ROWS
from orchestrator.infra import backends as infra


@pytest.fixture(scope="module")
def running():
    i = infra.start(29380, 29307, cpus="0", downstream_port=29382)
    yield i
    infra.stop(i)


def listening_addresses(pids) -> set[str]:
    addrs = set()
    for c in psutil.net_connections("inet"):
        if c.pid in pids and c.status == psutil.CONN_LISTEN:
            addrs.add(c.laddr.ip)
    return addrs


def test_seeded_and_password_protected(running):
    r = redis.Redis(host="127.0.0.1", port=29380, password=running.password)
    assert r.mget("bench:1", "bench:2", "bench:3") == [b"value-1", b"value-2", b"value-3"]
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(host="127.0.0.1", port=29380, password="wrong").ping()
    env = running.env()
    conn = pymysql.connect(host="127.0.0.1", port=29307, user=env["DB_USER"], password=env["DB_PASSWORD"],
                           database=env["DB_NAME"])
    with conn.cursor() as c:
        c.execute("SELECT COUNT(*), MIN(id), MAX(id) FROM item")
        assert c.fetchone() == (SEED_ROWS, 1, SEED_ROWS)
        c.execute("SELECT name, price FROM item WHERE id = 42")
        name, price = c.fetchone()
        assert name == "item-42" and float(price) == 10.5
    conn.close()


def test_listens_on_loopback_only(running):
    assert listening_addresses(set(running.pids.values())) == {"127.0.0.1"}


def test_password_not_on_any_command_line(running):
    for pid in running.pids.values():
        assert running.password not in " ".join(psutil.Process(pid).cmdline())


def test_stop_leaves_nothing():
    i = infra.start(29381, 29308, cpus="0", downstream_port=29383)
    pids, data = list(i.pids.values()), Path(i.data_dir)
    infra.stop(i)
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in pids)
    assert not data.exists()


def test_a_busy_port_is_a_clear_usage_error(running):
    from orchestrator.errors import UsageError
    with pytest.raises(UsageError, match="port 29380 for Redis is already in use by pid"):
        infra.start(29380, 29309, cpus="0", downstream_port=29384)


def test_the_db_goes_back_to_its_seed_between_targets(running):
    """db-write of one target must not grow the table the next one reads (or writes ids into)."""
    env = running.env()
    conn = pymysql.connect(host="127.0.0.1", port=29307, user=env["DB_USER"], password=env["DB_PASSWORD"],
                           database=env["DB_NAME"], autocommit=True)
    with conn.cursor() as c:
        c.executemany("INSERT INTO item (name, price) VALUES (%s, %s)", [("bench-write", 1.5)] * 50)
        assert infra.reset_db(running) == 50
        c.execute("SELECT COUNT(*), MAX(id) FROM item")
        assert c.fetchone() == (SEED_ROWS, SEED_ROWS)
        c.execute("INSERT INTO item (name, price) VALUES ('bench-write', 1.5)")
        assert c.lastrowid == SEED_ROWS + 1
    conn.close()


def test_the_probe_reads_a_statement_running_and_a_client_connected(running):
    """The evidence's gauges, where what they count is known: one statement sleeps in MariaDB while
    the probe polls, one extra client holds a Redis connection. Under load a point SELECT runs for
    tens of microseconds and a poll every 0.25 s rarely meets one, so the gauges are proven here."""
    import threading
    import time

    from orchestrator.measure.evidence import Probe
    probe = Probe(running, server_pid=None)
    idle = probe.read()
    env = running.env()
    conn = pymysql.connect(host="127.0.0.1", port=29307, user=env["DB_USER"], password=env["DB_PASSWORD"],
                           database=env["DB_NAME"])
    client = redis.Redis(host="127.0.0.1", port=29380, password=running.password)
    client.ping()
    sleeper = threading.Thread(target=lambda: conn.cursor().execute("SELECT SLEEP(3)"))
    sleeper.start()
    try:
        readings = []
        for _ in range(20):
            readings.append(probe.read())
            if readings[-1].db_running:
                break
            time.sleep(0.1)
        busy = readings[-1]
        assert busy.db_running == idle.db_running + 1, [r.db_running for r in readings]
        assert busy.db_connections == idle.db_connections + 1
        assert busy.redis_clients == idle.redis_clients + 1
    finally:
        sleeper.join()
        conn.close()
        client.close()
        probe.close()


def test_no_open_door(running):
    """Another local user's tries, as the issue made them: root over TCP, files through SQL as the
    app user, and Redis without its password."""
    with pytest.raises(pymysql.err.OperationalError, match="Access denied for user 'root'@'127.0.0.1'"):
        pymysql.connect(host="127.0.0.1", port=29307, user="root", connect_timeout=5)
    env = running.env()
    app = pymysql.connect(host="127.0.0.1", port=29307, user=env["DB_USER"], password=env["DB_PASSWORD"],
                          database=env["DB_NAME"], local_infile=True)
    with app.cursor() as c:
        c.execute("SELECT LOAD_FILE('/etc/passwd'), @@secure_file_priv, @@local_infile")
        content, files_dir, local_infile = c.fetchone()
        assert content is None and local_infile == 0
        assert Path(files_dir).parent.parent == Path(running.data_dir) and not any(Path(files_dir).iterdir())
        with pytest.raises(pymysql.err.OperationalError, match="(?i)local"):
            c.execute("LOAD DATA LOCAL INFILE '/etc/hostname' INTO TABLE item (name)")
        c.execute("SHOW GRANTS")
        grants = " ".join(row[0] for row in c.fetchall())
        assert "GRANT USAGE ON *.*" in grants and "ALL PRIVILEGES" not in grants and "FILE" not in grants, grants
        with pytest.raises(pymysql.err.OperationalError, match="DROP command denied"):
            c.execute("DROP TABLE item")
    app.close()
    # the socket, where root needs no password, is in a folder no other user may enter
    assert Path(running.socket).parent.stat().st_mode & 0o077 == 0
    if psutil.Process().username() == "root":
        assert psutil.Process(running.pids["mariadb"]).username() == "mysql"
    with pytest.raises(redis.AuthenticationError, match="(?i)auth"):
        redis.Redis(host="127.0.0.1", port=29380).get("bench:1")
    with pytest.raises(redis.exceptions.NoPermissionError):
        redis.Redis(host="127.0.0.1", port=29380, password=running.password).config_get("dir")
