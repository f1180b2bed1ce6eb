"""The option table (config/option_table.py) on the command line: `takes(command)` makes a command's
signature of the options it takes and hands the command its options as one `Given`."""
from __future__ import annotations

import functools
import inspect
import typing
from typing import Callable, Optional

import typer

from orchestrator.config.option_table import Given, Option, of


def parameter(o: Option, command: str) -> inspect.Parameter:
    """The option as a keyword parameter of `command`, with its Typer default, flags, help and environment."""
    default = o.default_for(command)
    return inspect.Parameter(
        # None: left out; ...: required
        o.name, inspect.Parameter.KEYWORD_ONLY, annotation=Optional[o.type] if default is None else o.type,
        default=typer.Option(default, *o.flags, help=o.help_for(command), envvar=o.envvar))


def takes(command: str) -> Callable:
    """Decorator: the command's signature is its own parameters (its arguments and the options only it takes),
    then the table's options of `command`; it is called with its own and `given`, a Given of the table's."""
    def wrap(fn: Callable) -> Callable:
        hints = typing.get_type_hints(fn)
        own = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in inspect.signature(fn).parameters.values()
               if p.name != "given"]
        table = [parameter(o, command) for o in of(command)]

        @functools.wraps(fn)
        def call(**values):
            mine = {p.name: values.pop(p.name) for p in own if p.name in values}
            return fn(**mine, given=Given(**values))
        call.__signature__ = inspect.Signature(own + table)
        call.__annotations__ = {p.name: p.annotation for p in own + table}
        del call.__wrapped__   # Typer reads the signature made here, not the function's own
        return call
    return wrap
