"""The report's tables: per scenario and load level, each metric by target with the lead of the best
and whether it is beyond the noise (comparison_table); the winners of a run (winners_matrix); the
cells never crowned; and what the backends and the kernel counted (evidence_table). Each is a
DataFrame of display strings, rendered by the report and shown as is by a notebook.
"""
from __future__ import annotations

from orchestrator import lazy
from orchestrator.core.schema import METRICS
from orchestrator.report.labels import MARKS, cells_at, metric_title
from orchestrator.results import analysis
from orchestrator.results.analysis import fmt

np = lazy.module("numpy")
pd = lazy.module("pandas")

TABLE_METRICS = ["rps", "latency_mean_ms", "latency_p50_ms", "latency_p90_ms", "latency_p95_ms", "latency_p99_ms",
                 "latency_p999_ms", "mb_received", "bytes_per_response", "server_cpu_pct", "cpu_ms_per_req",
                 "server_peak_rss_mb", "server_peak_threads", "gc_time_ms"]
WINNER_METRICS = ["rps", "latency_p50_ms", "latency_p99_ms", "cpu_ms_per_req", "server_peak_rss_mb"]


def _value(row, metric: str) -> str:
    if row["state"] == "failed":
        return "✗ failed"
    text = fmt(row[metric])
    if row["state"] == "partial":
        return f"{text} ✗ {row['ok']}/{row['repeats']} ran"
    return f"{text} ⚠ {row['check_flags']}" if row["state"] == "flagged" else text


def _pct(value: float) -> str:
    return f"{value:+.{0 if abs(value) >= 10 else 1}f}%"


def _lead(lead: pd.Series, unit: str) -> str:
    if pd.isna(lead["diff_pct"]):
        return "–"
    return f"{_pct(lead['diff_pct'])} ({'+' if lead['diff_abs'] >= 0 else '-'}{fmt(abs(lead['diff_abs']), unit)})"


def _interval(lead: pd.Series) -> str:
    return "–" if pd.isna(lead["ci_low_pct"]) else f"{_pct(lead['ci_low_pct'])} to {_pct(lead['ci_high_pct'])}"


def _mde(lead: pd.Series) -> str:
    return "–" if pd.isna(lead["mde_pct"]) else f"{lead['mde_pct']:.{0 if lead['mde_pct'] >= 10 else 1}f}%"


def comparison_table(summ: pd.DataFrame, scenario: str, level, x: str = "concurrency",
                     metrics: list[str] = TABLE_METRICS, noise: dict | None = None) -> pd.DataFrame:
    """metric | one column per target | difference (best vs runner-up, % and absolute) | its 95 % interval |
    MDE (the smallest difference these repeats could detect) | better.

    Medians over repeats; failed cells read "✗ failed", flagged ones carry "⚠" and their flags, and
    neither is ever "better". `noise`: the machine's noise floor (analysis.leaders).
    """
    cells = cells_at(summ, scenario, x, level, sorted(set(summ["target"])))
    leads = analysis.leaders(cells, metrics, x, noise).set_index("metric")
    rows = []
    for metric in metrics:
        lead = leads.loc[metric]
        verdict, why = lead["verdict"], lead["why"]
        crowned = f"{lead['best']} ({why})" if lead.get("bound") else lead["best"]
        better = crowned if verdict == "crowned" else f"inconclusive: {why}" if verdict == "inconclusive" else why
        rows.append([metric_title(metric), *[_value(r, metric) for _, r in cells.iterrows()],
                     _lead(lead, METRICS[metric].unit), _interval(lead), _mde(lead), better])
    return pd.DataFrame(rows, columns=["metric", *cells["target"], "difference", "95% interval", "MDE", "better"])


EVIDENCE = {"redis_commands_per_request": "Redis cmds / req", "db_selects_per_request": "SELECTs / req",
            "db_inserts_per_request": "INSERTs / req", "db_prepares_per_request": "PREPAREs / req",
            "redis_peak_clients": "peak Redis clients", "db_peak_connections": "peak DB connections",
            "db_peak_running": "peak statements running", "tcp_listen_overflows": "listen overflows",
            "tcp_retransmits": "TCP retransmits", "downstream_calls_per_request": "downstream calls / req",
            "downstream_peak_in_flight": "peak calls in flight", "downstream_peak_connections": "peak downstream conns",
            "cache_miss_share": "cache miss share"}


def evidence_table(df: pd.DataFrame, scenario: str, x: str = "concurrency") -> pd.DataFrame | None:
    """What Redis, MariaDB and the kernel counted per target and level (medians over the repeats that
    ran): the work per request the contract asks for, the peaks of the pools, lost connections.
    None for runs made before the backends were sampled."""
    ran = df[(df["scenario"] == scenario) & (df["status"] == "ok")]
    cols = [c for c in EVIDENCE if c in ran and ran[c].notna().any()]
    if ran.empty or not cols:
        return None
    table = ran.groupby(["target", x], sort=True)[cols].median().reset_index()
    for c in cols:
        spec = ".2f" if c.endswith("_request") else ",.0f"
        table[c] = table[c].map(lambda v, spec=spec: "" if pd.isna(v) else format(v, spec))
    return table.rename(columns=EVIDENCE)


def winner_text(lead: pd.Series) -> str:
    """One lead of analysis.leaders in words, with its interval and MDE."""
    if lead["verdict"] == "no clean cell":
        return "no clean cell"
    if pd.isna(lead["runner_up"]):
        return f"{lead['best']} ({lead['why']})" if lead["verdict"] == "crowned" else \
            f"inconclusive: {lead['best']} is {lead['why']}"
    # a cell that only ran slowed: its lead is a bound (bias.py), and the words say which way
    at = f"{lead['bound']} " if lead.get("bound") else ""
    vs = f"{at}{_pct(lead['diff_pct'])} vs {lead['runner_up']}"
    mde = "" if pd.isna(lead["mde_pct"]) else f"; MDE {_mde(lead)}"
    if lead.get("left_out"):   # slowed repeats the ranking left out (analysis.summary)
        mde += f"; {lead['left_out']}"
    if lead["verdict"] == "crowned":
        return f"{lead['best']}: {vs} (95% CI {_interval(lead)}{mde})"
    if lead["verdict"] == "within noise":
        return f"{lead['why']}: {lead['best']}, {lead['runner_up']} ({_pct(lead['diff_pct'])}{mde})"
    return f"inconclusive: {lead['best']} {vs}, but {lead['why']}"


def winners_matrix(summ: pd.DataFrame, x: str = "concurrency", metrics: list[str] = WINNER_METRICS,
                   noise: dict | None = None) -> pd.DataFrame:
    """Scenario (and load level) x metric: the best clean target, its lead over the runner-up and whether
    that is beyond the noise (analysis.leaders; `noise` the machine's noise floor)."""
    leads = analysis.leaders(summ, metrics, x, noise)
    rows = {}
    for _, lead in leads.iterrows():
        rows.setdefault((lead["scenario"], lead[x]), {})[metric_title(lead["metric"])] = winner_text(lead)
    table = pd.DataFrame.from_dict(rows, orient="index")
    return table.rename_axis(["scenario", x]).reset_index() if len(table) else table


def not_crowned(summ: pd.DataFrame, x: str = "concurrency") -> pd.DataFrame:
    """The cells that are never crowned, and why: failed (the reason), partly failed, or flagged."""
    bad = summ[~summ["eligible"]]
    why = np.where(bad["state"] == "flagged", bad["check_flags"], bad["reason"])
    return pd.DataFrame({"scenario": bad["scenario"], x: bad[x], "target": bad["target"],
                         "state": [f"{MARKS[s]} {s}" for s in bad["state"]], "why": why})
