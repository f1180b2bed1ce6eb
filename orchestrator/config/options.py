"""Parsing and checking command-line values: one clear UsageError for anything that cannot work."""
from __future__ import annotations

import ipaddress
import re
import socket

import psutil

from orchestrator.errors import UsageError

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_BYTES = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def duration(value: str, what: str, allow_zero: bool = False) -> float:
    """'10s', '500ms', '2m', '30d' or a bare number of seconds -> seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*", value or "")
    if not m:
        raise UsageError(f"{what} '{value}' is not a duration (examples: 10s, 500ms, 2m)")
    seconds = float(m.group(1)) * _UNITS[m.group(2) or "s"]
    if seconds <= 0 and not (allow_zero and seconds == 0):
        raise UsageError(f"{what} must be {'zero or ' if allow_zero else ''}more than zero, not '{value}'")
    return seconds


def byte_size(value: str, what: str) -> int:
    """'5G', '500m', '2T' or a bare number of bytes (binary units, 'GiB' and 'GB' alike) -> bytes."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", (value or "").lower())
    if not m:
        raise UsageError(f"{what} '{value}' is not a size (examples: 5G, 500M, 2T)")
    return int(float(m.group(1)) * _BYTES[m.group(2)])


def positive_ints(value: str, what: str, maximum: int = 100_000) -> list[int]:
    """'64,256' -> [64, 256], every one of them 1..maximum."""
    out = []
    for part in (value or "").split(","):
        part = part.strip()
        if not re.fullmatch(r"\d+", part) or not 1 <= int(part) <= maximum:
            raise UsageError(f"{what} '{value}': each must be a whole number from 1 to {maximum:,}")
        out.append(int(part))
    return out


def pool_size(value: int, what: str, maximum: int = 1000) -> int:
    """A connection pool's size: 1..maximum (MariaDB's max_connections bounds what is useful)."""
    if not 1 <= value <= maximum:
        raise UsageError(f"{what} must be from 1 to {maximum}, not {value}")
    return value


def cpu_list(value: str, what: str) -> str:
    """A taskset CPU list ('1', '0-1', '0,2') of CPUs this machine has."""
    if not re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", value or ""):
        raise UsageError(f"{what} '{value}' is not a CPU list (examples: 1, 0-1, 0,2)")
    have = psutil.cpu_count()
    for part in value.split(","):
        lo, _, hi = part.partition("-")
        if int(hi or lo) < int(lo) or int(hi or lo) >= have:
            raise UsageError(f"{what} '{value}': this machine has CPUs 0-{have - 1}")
    return value


def memory(value: str) -> str:
    if not re.fullmatch(r"[1-9]\d*[mMgG]", value or ""):
        raise UsageError(f"--memory '{value}' must look like 768m or 2g")
    return value.lower()


def heap(value: str) -> str:
    if not re.fullmatch(r"[1-9]\d*[mMgG]", value or ""):
        raise UsageError(f"--heap '{value}' must look like 512m or 2g")
    return value.lower()


def ephemeral_range() -> tuple[int, int]:
    try:
        lo, hi = open("/proc/sys/net/ipv4/ip_local_port_range").read().split()
        return int(lo), int(hi)
    except (OSError, ValueError):
        return 32768, 60999


def port(value: int, what: str) -> int:
    """A listening port outside the ephemeral range: there, the load generator's or a probe's own
    client sockets can take the port (a TCP self-connect), and the server then fails to bind."""
    lo, hi = ephemeral_range()
    if not 1024 <= value <= 65534:
        raise UsageError(f"{what} {value} must be between 1024 and 65534")
    if lo <= value <= hi:
        raise UsageError(f"{what} {value} is in this machine's ephemeral port range {lo}-{hi}, where outgoing "
                         f"connections may take it: choose one below {lo}")
    return value


LOCUST_MASTER_PORT = 5557   # Locust's own default


def ipv4_and_port(value: str, what: str, default_port: int = LOCUST_MASTER_PORT) -> tuple[str, int]:
    """IPV4-ADDRESS[:PORT]: an address, never a name (a lookup could leave this machine). The port is
    not checked against this machine's ranges: it may be another machine's."""
    address, _, given = value.partition(":")
    try:
        ipaddress.IPv4Address(address)
    except ValueError:
        raise UsageError(f"{what} '{value}' must be IPV4-ADDRESS[:PORT]") from None
    if given and not given.isdigit():
        raise UsageError(f"{what} '{value}' must be IPV4-ADDRESS[:PORT]")
    return address, int(given) if given else default_port


def locust_master(value: str) -> tuple[str, int]:
    """--locust-master ADDRESS[:PORT]: an address of this machine, other than loopback, that Locust
    workers on other machines reach this machine's master at."""
    address, chosen = ipv4_and_port(value, "--locust-master")
    ip = ipaddress.IPv4Address(address)
    if ip.is_loopback or ip.is_unspecified:
        raise UsageError(f"--locust-master {address}: workers on other machines cannot reach this machine at "
                         f"{address}; give this machine's address on the network they share")
    with socket.socket() as s:
        try:
            s.bind((address, 0))
        except OSError:
            raise UsageError(f"--locust-master {address} is not an address of this machine") from None
    return address, port(chosen, "--locust-master's port")
