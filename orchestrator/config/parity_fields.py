"""The fields a framework.toml's `parity` table may declare, with the label the parity table gives each.

Their own module, importing nothing, because two stages read them: the catalog validates a manifest
against them, and the report (report/parity_table.py) reads a run's recorded parity against them;
the catalog's other imports (the scenarios and their HTTP checks) must not load with the report.
"""
from __future__ import annotations

# What a manifest's `parity` table declares (a variant's own table overrides the framework's): the
# limits that its code and configuration set, shown in the parity table beside the results.
PARITY_FIELDS = {
    "workers": "threads that run a request's work",
    "redis": "Redis client, commands in flight",
    "db": "database pool, statements in flight",
    "downstream": "HTTP client to the downstream, calls in flight",
    "keep_alive": "requests per keep-alive connection",
    "backlog": "accept backlog",
}
