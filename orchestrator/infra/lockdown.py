"""What keeps Redis and MariaDB closed to other users of this machine while a run or `bench infra
up` has them running: MariaDB's root only on a socket in a folder of the server's own, no file
access through SQL, the app user limited to the scenarios' statements; Redis with no @admin
command for anyone. tests/processes/behaviour/test_infra.py tries each door; docs/security.md says what is left open."""
from __future__ import annotations

import os
import pwd
import shutil
from pathlib import Path

from orchestrator import REPO_ROOT

# mariadbd's own folder in the data directory, 0700 and its user's: its socket (root logs in there
# without a password, so no other local user may reach it), its pid file, the init file and FILES_DIR.
SERVER_DIR = "mariadb-run"
# secure-file-priv: an empty folder, the only one LOAD_FILE, LOAD DATA and SELECT ... INTO OUTFILE
# may touch (and only root has the FILE privilege they need).
FILES_DIR = "files"
# mariadbd's --init-file, one for the orchestrator and for Compose (compose/infra.yml): root on the
# socket only, before the first connection.
ROOT_SOCKET_ONLY = REPO_ROOT / "compose" / "lockdown.sql"
# What the contract's scenarios run as DB_USER (db-read's SELECT, db-write's INSERT), on their one
# table: no FILE, no global privilege, no DDL.
APP_PRIVILEGES = "SELECT, INSERT"



def redis_settings(password: str) -> str:
    """redis.conf's lines for who may do what. DEBUG, MODULE LOAD and CONFIG SET of `dir`,
    `dbfilename` and the like (the classic way to write a file through Redis) are off, as Redis 7's
    defaults have them, said here so that another build cannot turn them on; and the one user, whose
    password the targets have, may run no @admin command (CONFIG, DEBUG, MODULE, SHUTDOWN, SAVE,
    REPLICAOF, MONITOR, ACL changes): neither the contract's scenarios nor bench (INFO, MSET) use one."""
    return ("enable-debug-command no\nenable-module-command no\nenable-protected-configs no\n"
            f"user default on >{password} ~* &* +@all -@admin\n")


def mysql_account() -> tuple[int, int] | None:
    """The uid and gid of Debian's `mysql` user (the mariadb-server package makes it), if there is one."""
    try:
        entry = pwd.getpwnam("mysql")
    except KeyError:
        return None
    return entry.pw_uid, entry.pw_gid


def own_tree(root: Path, account: tuple[int, int] | None) -> None:
    """Give root and everything in it to account (uid, gid); None leaves it to whoever made it."""
    if account is None:
        return
    for folder, dirs, files in os.walk(root):
        for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            os.chown(name, *account)


def server_folder(data_dir: Path, account: tuple[int, int] | None) -> Path:
    """mariadbd's own folder (SERVER_DIR), made and given to account; the data directory becomes
    traversable, not listable, when that is another user than the one who made it."""
    own = data_dir / SERVER_DIR
    (own / FILES_DIR).mkdir(parents=True)
    own.chmod(0o700)
    shutil.copyfile(ROOT_SOCKET_ONLY, own / "init.sql")   # in a folder the server's user can read
    own_tree(own, account)
    if account is not None and account[0] != data_dir.stat().st_uid:
        data_dir.chmod(0o711)
    return own


def mariadb_options(own: Path) -> list[str]:
    """mariadbd's options for a server whose own folder is own."""
    return [f"--pid-file={own / 'mariadb.pid'}", f"--init-file={own / 'init.sql'}",
            f"--secure-file-priv={own / FILES_DIR}", "--local-infile=0"]
