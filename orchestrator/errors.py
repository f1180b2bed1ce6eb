"""Errors that end a command with one clear line instead of a traceback."""


class BenchError(Exception):
    """A problem the user can fix; the CLI prints the message and exits with `exit_code`."""

    exit_code = 1


class UsageError(BenchError):
    """Bad input on the command line or in a file the user wrote."""

    exit_code = 2


class MissingTool(BenchError):
    """A prerequisite (JDK, wrk, Redis, MariaDB, Docker) is absent; the message says how to get it."""

    exit_code = 2


class ManifestError(UsageError):
    """A framework.toml that does not validate; the message names the file and the field."""

    def __init__(self, path, field: str, problem: str):
        super().__init__(f"{path}: field '{field}': {problem}")
        self.path = path
        self.field = field


class BadFile(UsageError):
    """A file that is not what its name says: a folder, a FIFO or a device, binary, not UTF-8, truncated, not
    valid JSON or Parquet. One type for every such file, so that a notebook catches one error."""

    def __init__(self, path, problem: str):
        super().__init__(f"{path}: {problem}")
        self.path = path


class TargetFailed(Exception):
    """A target could not be built, started or verified; its cells are stored as failed."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason
