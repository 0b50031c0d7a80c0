"""The ``toolrig`` command line.

Typer and rich are imported here and in the command modules only, so ``import toolrig`` stays
cheap. Each command group lives in its own module with a ``register(app)`` function; add a
module name to :data:`toolrig.cli._app.COMMAND_MODULES` to add commands.
"""

from __future__ import annotations

from toolrig.cli._app import app, build_app, main

__all__ = ["app", "build_app", "main"]
