"""Reading the TOML files a user writes (framework.toml, profiles, presets): one mechanism, so that
every error names the file and the dotted field, says what is wrong in the same words everywhere,
and lists the valid values. ManifestError prints as one line and exits 2.

A schema library (pydantic, jsonschema) would describe the types, but not these files' own rules
(a placeholder is a whole argument, one default variant, requests >= connections) nor say them as
plainly; this is about eighty lines that the three readers share.

Before any of that, a file must be what its name says (read_text): a regular file of text. The run folder's
reader (results/store.py) checks run.json and the Parquet files with the same functions.
"""
from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path
from typing import Any, NoReturn

from orchestrator.config import options
from orchestrator.errors import BadFile, ManifestError, UsageError

_MISSING = object()
# The largest TOML file bench reads: its own are a few KiB, so anything larger is not one of them.
MAX_TOML_BYTES = 1 << 20
_NOT_FILES = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a device"),
              (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"))


def regular_file(path: Path) -> Path:
    """path, when it names a regular file (through symlinks), else BadFile. Checked with stat before any
    open: reading a FIFO waits for a writer forever, a device such as /dev/zero never ends, and opening
    some devices does something."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise BadFile(path, "no such file") from None
    except OSError as e:
        raise BadFile(path, f"cannot read it: {e.strerror}") from None
    if not stat.S_ISREG(mode):
        what = next((name for test, name in _NOT_FILES if test(mode)), "not a regular file")
        raise BadFile(path, f"{what}, not a file")
    return Path(path)


def read_bytes(path: Path, limit: int) -> bytes:
    """A regular file's bytes, at most limit of them; BadFile otherwise."""
    regular_file(path)
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise BadFile(path, f"cannot read it: {e.strerror}") from None
    if len(data) > limit:
        raise BadFile(path, f"larger than {limit:,} bytes: not a file of this kind")
    return data


def read_text(path: Path, limit: int = MAX_TOML_BYTES) -> str:
    """A regular file's UTF-8 text, at most limit bytes; BadFile for anything else (a binary file included)."""
    data = read_bytes(path, limit)
    if b"\0" in data:
        raise BadFile(path, "a binary file (it holds NUL bytes), not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadFile(path, f"not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})") from None


class Document:
    """A TOML table of a file, with typed access that raises ManifestError naming the field."""

    def __init__(self, path: Path, table: dict[str, Any], prefix: str = ""):
        self.path, self.table, self.prefix = Path(path), table, prefix

    @classmethod
    def read(cls, path: Path) -> "Document":
        try:
            return cls(path, tomllib.loads(read_text(path)))
        except tomllib.TOMLDecodeError as e:
            raise ManifestError(path, "(syntax)", f"not valid TOML: {e}") from None

    def fail(self, key: str, problem: str) -> NoReturn:
        raise ManifestError(self.path, self.prefix + key, problem)

    def check_keys(self, allowed) -> None:
        for key in self.table:
            if key not in allowed:
                self.fail(key, f"unknown field; valid: {', '.join(allowed)}")

    def __contains__(self, key: str) -> bool:
        return key in self.table

    def get(self, key: str, kind: type, default: Any = _MISSING, nonempty: bool = True) -> Any:
        if key not in self.table:
            if default is _MISSING:
                self.fail(key, "missing")
            return default
        value = self.table[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            self.fail(key, f"must be a {kind.__name__}, not {type(value).__name__}")
        if nonempty and kind in (str, list, dict) and not value:
            self.fail(key, "must not be empty")
        return value

    def choice(self, key: str, valid, what: str, default: Any = _MISSING) -> Any:
        value = self.table.get(key, default)
        if value not in valid:
            self.fail(key, f"{value!r} is not {what}; valid: {', '.join(valid)}")
        return value

    def whole(self, key: str, default: Any = _MISSING, minimum: int = 1) -> int:
        value = self.table.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            self.fail(key, f"must be a whole number of at least {minimum}; got {value!r}")
        return value

    def wholes(self, key: str, default: Any = _MISSING, maximum: int = 1_000_000) -> tuple[int, ...]:
        """A whole number or a list of them, each from 1 to maximum."""
        value = self.table.get(key, default)
        value = [value] if isinstance(value, int) and not isinstance(value, bool) else value
        if not isinstance(value, list) or not value or not all(
                isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= maximum for v in value):
            self.fail(key, f"must be a whole number or a list of them, each 1 to {maximum:,}; got {value!r}")
        return tuple(value)

    def fraction(self, key: str, default: float) -> float:
        """A share strictly between 0 and 1 (0.001 is 0.1 %)."""
        value = self.table.get(key, default)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value < 1:
            self.fail(key, f"must be a number between 0 and 1 (0.001 is 0.1 %); got {value!r}")
        return float(value)

    def duration(self, key: str, default: str, allow_zero: bool = False) -> float:
        value = self.table.get(key, default)
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            self.fail(key, f"must be a duration such as \"10s\"; got {value!r}")
        try:
            return options.duration(str(value), self.prefix + key, allow_zero=allow_zero)
        except UsageError as e:
            self.fail(key, str(e))

    def str_list(self, key: str, default: Any = _MISSING, nonempty: bool = True) -> tuple[str, ...]:
        value = self.get(key, list, default, nonempty)
        if any(not isinstance(v, str) or not v for v in value):
            self.fail(key, "must be a list of non-empty strings")
        return tuple(value)

    def str_map(self, key: str) -> dict[str, str]:
        value = self.get(key, dict, {}, nonempty=False)
        for k, v in value.items():
            if not isinstance(v, str):
                self.fail(f"{key}.{k}", f"must be a str, not {type(v).__name__}")
        return dict(value)

    def sub(self, key: str, default: Any = _MISSING) -> "Document":
        """The table at key (default: what to use when it is absent, e.g. {})."""
        return Document(self.path, self.get(key, dict, default, nonempty=False), f"{self.prefix}{key}.")
