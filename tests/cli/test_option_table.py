"""The option table (config/option_table.py): each option declared once feeds the commands' signatures, the
settings, run.json and docs/options.md; a toy option added in one place is found in all of them."""
from __future__ import annotations

import inspect
import subprocess
import sys

import pytest
import typer
from conftest import FIXTURES, ROOT

from orchestrator.cli.app import app
from orchestrator.config import option_table
from orchestrator.errors import UsageError


def test_docs_options_md_is_the_table_written_out():
    assert (ROOT / "docs" / "options.md").read_text() == option_table.markdown(), \
        "docs/options.md is not the table: python -c 'from orchestrator.config import option_table as o; " \
        "open(\"docs/options.md\", \"w\").write(o.markdown())'"


def test_a_profile_option_applies_to_the_kinds_the_table_names_and_is_refused_by_the_others():
    from orchestrator.config import kinds, profiles
    everyone = list(kinds.KINDS)
    assert option_table.kinds_taking("repeat") == everyone and option_table.kinds_taking("requests") == ["burst"]
    assert "| `--slo` | str |  | run | capacity |" in option_table.markdown()
    # a value of each profile option as the command line gives it
    given = {"concurrency": "8", "rate": "100", "slo": "p99=50ms", "requests": 10_000, "workers": 1, "warmup": "1s",
             "warmup_max": "2s", "duration": "2s", "repeat": 2}
    assert set(given) == {o.name for o in option_table.OPTIONS if o.profile}
    shipped = {p.kind: p for p in map(profiles.load, profiles.shipped())}
    assert set(shipped) == set(everyone)
    for name, raw in given.items():
        ((field_name, value),) = option_table.profile_changes(option_table.Given(**{name: raw})).items()
        flag = option_table.profile_flags()[field_name]
        for kind, profile in shipped.items():
            if kind in option_table.kinds_taking(field_name):
                profile.with_overrides(**{field_name: value})
            else:
                with pytest.raises(UsageError, match=f"{flag} does not apply to the {kind} profile"):
                    profile.with_overrides(**{field_name: value})


def _commands() -> dict:
    """Every command by its name as the table names it ('infra up' for a group's)."""
    root = typer.main.get_command(app)
    out = {}
    for name, cmd in root.commands.items():
        if hasattr(cmd, "commands"):   # a group (Typer keeps a click of its own)
            out.update({f"{name} {sub}": c for sub, c in cmd.commands.items()})
        else:
            out[name] = cmd
    return out


def test_each_command_takes_the_table_s_options_once_with_their_flags():
    commands = _commands()
    for o in option_table.OPTIONS:
        assert set(o.commands) <= set(commands), f"{o.name}: no command {set(o.commands) - set(commands)}"
        assert set(o.own) <= set(o.commands), o.name
        for name in o.commands:
            (param,) = [p for p in commands[name].params if p.name == o.name]
            flags = {f for spec in o.flags for f in spec.split("/")}
            assert flags == set(param.opts) | set(param.secondary_opts), (name, o.name)
    for name, cmd in commands.items():
        flags = [f for p in cmd.params for f in (*p.opts, *p.secondary_opts)]
        assert len(flags) == len(set(flags)), f"{name} takes a flag twice: {flags}"


def test_a_default_is_the_settings_own():
    from orchestrator.cli.common import parse_settings
    from orchestrator.config.plan import Settings
    given = option_table.Given(**{o.name: o.default for o in option_table.of("run")})
    assert parse_settings(given) == parse_settings(option_table.Given()) == Settings()
    # each setting's default written once: in its Setting, which an option's own default repeats or leaves out
    for o in option_table.OPTIONS:
        if o.setting and o.default is not None:
            assert o.setting.parse(o.default, o.flags[0]) == o.setting.default if o.setting.parse \
                else o.default == o.setting.default, o.name


TOY = """
import sys
from orchestrator.config import option_table
# one entry, before anything reads the table: its flag, the commands that take it, and the setting it gives
toy = option_table.Option("toy", ("--toy",), str, None, "A toy option.", ("run", "verify"),
                          setting=option_table.Setting("toy", "none", lambda v, flag: v.upper()))
option_table.OPTIONS = (*option_table.OPTIONS, toy)
from typer.testing import CliRunner
from orchestrator.cli.app import app
from orchestrator.cli.common import parse_settings
from orchestrator.cli.run_command import run
from orchestrator.cli.run_options import RunOptions
from orchestrator.config.catalog import discover
from orchestrator.config.plan import Settings
runner = CliRunner()
print("help:", "--toy" in runner.invoke(app, ["verify", "--help"], terminal_width=200).output)
# taken on the command line: the usage rules, which run after the options are parsed, answer
r = runner.invoke(app, ["run", "--toy", "hello", "--quick"])
print("parsed:", str(r.exception))
print("settings:", parse_settings(option_table.Given(toy="hello")).toy, Settings().toy)
defaults = {name: p.default.default for name, p in __import__("inspect").signature(run).parameters.items()}
plan = RunOptions(**{**defaults, "toy": "hello", "framework": "fixture"}).plan(discover(sys.argv[1]), print)
print("run.json:", plan.to_dict()["asked"]["toy"], plan.to_dict()["settings"]["toy"])
"""


def test_a_toy_option_added_in_one_place_is_on_the_command_line_and_in_run_json(tmp_path):
    r = subprocess.run([sys.executable, "-c", TOY, str(FIXTURES)], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert "help: True" in lines and "parsed: --quick goes with --preset" in lines, r.stdout
    # in the settings, through its setting's parse, with its default where it is not given; and in run.json
    assert "settings: HELLO none" in lines and "run.json: hello HELLO" in lines, r.stdout


def test_the_run_command_s_parameters_are_the_table_s():
    from orchestrator.cli.run_command import run
    assert [p.name for p in inspect.signature(run).parameters.values()] == [o.name for o in option_table.of("run")]
