"""Running a YAML command tool: an argv template filled one element per placeholder, never a shell.

A template element is text with ``{param}`` placeholders (``{{`` and ``}}`` are literal braces). Each
value is inserted into the element that names it and stays inside that one element: spaces, quotes,
``;``, ``$(...)``, newlines are just characters of an argument, because nothing parses the result as
shell. An element that is a lone placeholder is an operand: a string value that looks like an option
(``-o/tmp/x``) is refused unless the parameter allows options; so is any element whose first character
comes from a value and is ``-`` (a negative number ``-5``, ``{a}{b}`` with ``a=""`` and ``b="-rf"``), unless
the parameter that wrote it allows options. An element whose optional parameter is missing is dropped.
The command runs in the sandbox (the root bound at ``/work``, the bundle read-only, its ``bin/`` first on
``PATH``) or, when the bundle says ``sandbox: false`` and the loader allowed it, as a
plain subprocess with the same stdin, session, environment, timeout and output rules.
"""

from __future__ import annotations

import contextlib
import os
import signal
import string
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from toolrig import ToolFailure
from toolrig.builtins._shell import SHELL_ENV
from toolrig.errors import DefinitionError
from toolrig.guards import check_operand
from toolrig.sandbox import PROTECTED_IN_WORKDIR, WORKDIR, Sandbox

__all__ = ["CommandRunner", "Template", "parse_template"]

_FORMATTER = string.Formatter()


@dataclass(frozen=True)
class Template:
    """One argv element: literal text and placeholder names, in order (``("lit", None)`` / ``("", name)``)."""

    pieces: tuple[tuple[str, str | None], ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for _, name in self.pieces if name is not None)

    @property
    def lone(self) -> str | None:
        """The parameter name when the element is exactly one placeholder."""
        return self.pieces[0][1] if len(self.pieces) == 1 and not self.pieces[0][0] else None


def parse_template(element: str, where: str) -> Template:
    """Parse one argv element.

    Raises:
        DefinitionError: a format spec, conversion, attribute or index in a placeholder, or unbalanced braces.
    """
    try:
        parsed = list(_FORMATTER.parse(element))
    except ValueError as exc:
        raise DefinitionError(f"{where}: {element!r} has unbalanced braces ({exc}); write {{{{ and }}}} for "
                              "literal braces") from None
    pieces: list[tuple[str, str | None]] = []
    for literal, name, spec, conversion in parsed:
        if literal:
            pieces.append((literal, None))
        if name is None:
            continue
        if spec or conversion or not name.isidentifier():
            raise DefinitionError(f"{where}: placeholder {{{name}{'!' + conversion if conversion else ''}"
                                  f"{':' + spec if spec else ''}}} must be a plain parameter name, like {{path}}")
        pieces.append(("", name))
    return Template(tuple(pieces))


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass
class CommandRunner:
    """Fills a command template and runs it (the handler of a YAML command tool)."""

    tool: str
    argv: tuple[Template, ...]
    root: Path
    bundle: Path
    cwd: str
    timeout: float
    allow_options: frozenset[str]
    sandboxed: bool
    network: bool = False
    max_output_chars: int = 20_000
    env: Mapping[str, str] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    _sandbox: Sandbox | None = field(default=None, repr=False)

    def render(self, values: Mapping[str, Any]) -> list[str]:
        """The argv for these values (one element per template element, missing optional ones dropped)."""
        values = {**self.defaults, **values}
        out: list[str] = []
        for template in self.argv:
            if any(values.get(n) is None for n in template.names):
                continue
            if (lone := template.lone) is not None and isinstance(values[lone], str) \
                    and lone not in self.allow_options:
                check_operand(values[lone], name=f"parameter {lone!r}")
            parts = [(lit, None) if name is None else (_text(values[name]), name) for lit, name in template.pieces]
            text = "".join(part for part, _ in parts)
            leader = next((name for part, name in parts if part), None)  # who wrote the element's first character
            if leader is not None and leader not in self.allow_options and text.startswith("-"):
                check_operand(text, name=f"parameter {leader!r}")  # -5, or "{a}{b}" with a="" (or "-") b="rf"
            if "\0" in text:
                raise ToolFailure(f"{self.tool}: an argument contains a NUL character")
            out.append(text)
        if not out:
            raise ToolFailure(f"{self.tool}: the command is empty for these arguments")
        return self._program(out)

    def _program(self, argv: list[str]) -> list[str]:
        program = argv[0]
        local = self.bundle / program if "/" in program else self.bundle / "bin" / program
        if local.is_file():
            argv[0] = str(local)
        return argv

    def _environment(self) -> dict[str, str]:
        path = f"{self.bundle / 'bin'}:/usr/local/bin:/usr/bin:/bin"
        return {**SHELL_ENV, **self.env, "PATH": path}

    async def __call__(self, values: Mapping[str, Any]) -> str:
        argv = self.render(values)
        if self.sandboxed:
            return await self._sandboxed(argv)
        return await self._subprocess(argv)

    async def _sandboxed(self, argv: list[str]) -> str:
        if self._sandbox is None:
            self._sandbox = Sandbox(workdir=self.root, ro_paths=[self.bundle], network=self.network,
                                    protect=PROTECTED_IN_WORKDIR)
        cwd = WORKDIR if self.cwd in ("", ".") else f"{WORKDIR}/{self.cwd}"
        result = await self._sandbox.run(argv, cwd=cwd, env=self._environment(), timeout=self.timeout)
        if result.timed_out:
            raise TimeoutError(f"{self.tool} did not finish within {self.timeout:g} s and was killed")
        return _render(result.text, result.error_text, result.exit_code, self.max_output_chars)

    async def _subprocess(self, argv: list[str]) -> str:
        env = {"HOME": str(self.root), "LANG": "C.UTF-8", **self._environment()}
        process = await anyio.open_process(argv, cwd=self.root / self.cwd, env=env, stdin=subprocess.DEVNULL,
                                           start_new_session=True)
        limit = self.max_output_chars * 4
        outputs: list[bytes] = [b"", b""]
        try:
            with anyio.fail_after(self.timeout):
                async with anyio.create_task_group() as group:
                    for i, stream in enumerate((process.stdout, process.stderr)):
                        group.start_soon(_collect, stream, outputs, i, limit)
                await process.wait()
        except TimeoutError:
            raise TimeoutError(f"{self.tool} did not finish within {self.timeout:g} s and was killed") from None
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)  # the command's whole session, whatever it left behind
            with anyio.CancelScope(shield=True):
                await process.wait()
        return _render(outputs[0].decode("utf-8", "replace"), outputs[1].decode("utf-8", "replace"),
                       process.returncode, self.max_output_chars)


async def _collect(stream: anyio.abc.ByteReceiveStream | None, outputs: list[bytes], index: int, limit: int) -> None:
    if stream is None:
        return
    async for chunk in stream:
        if len(outputs[index]) < limit:
            outputs[index] += chunk[:limit - len(outputs[index])]


def _render(out: str, err: str, code: int | None, limit: int) -> str:
    text = out + (f"\n[stderr]\n{err}" if err else "")
    note = ""
    if len(text) > limit:
        note = f"\n[toolrig: {len(text):,} characters of output, the first {limit:,} shown]"
        text = text[:limit]
    return (text.rstrip("\n") + "\n" if text else "") + f"[exit code {code}]" + note


def templates(command: Sequence[Any], where: str) -> tuple[Template, ...]:
    """Parse a command given as a list of strings (numbers are accepted as literal text)."""
    if isinstance(command, str) or not isinstance(command, Sequence) or not command:
        raise DefinitionError(f"{where}: command must be a non-empty list of arguments, e.g. "
                              "[\"grep\", \"-n\", \"--\", \"{pattern}\", \"{path}\"] (never a shell string)")
    parsed = []
    for i, element in enumerate(command):
        if isinstance(element, bool) or not isinstance(element, str | int | float):
            raise DefinitionError(f"{where}: command[{i}] must be a string, not {type(element).__name__}")
        parsed.append(parse_template(str(element), f"{where}: command[{i}]"))
    if parsed[0].names:
        raise DefinitionError(f"{where}: the program (command[0]) cannot be a placeholder")
    return tuple(parsed)
