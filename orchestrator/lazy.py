"""A library imported where it is first used rather than where it is named.

pandas, NumPy and Arrow took 0.45 s of the 0.71 s that importing the CLI took here, and `--help`, a
usage error, `bench clean` or `bench verify` use none of them; the fast tier alone starts the CLI
about 60 times. A module-level `pd = lazy.module("pandas")` reads like the import it replaces.
"""
from __future__ import annotations

import importlib
from types import ModuleType


class module:  # lower case: it stands where an `import` statement would be
    """Stands for the module `name`; the first attribute read imports it."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str):
        # Reached only for names not set on this object, i.e. the module's: import_module is a
        # dictionary lookup once the module is loaded.
        real: ModuleType = importlib.import_module(self._name)
        return getattr(real, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"
