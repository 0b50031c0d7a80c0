"""``toolrig.Sandbox``: run a command or Python code in an OS sandbox, or refuse to run it at all."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from toolrig.errors import ConfigError, SandboxUnavailable
from toolrig.sandbox._backend import WORKDIR, Backend, RawRun, RunSpec, minimal_env
from toolrig.sandbox._bwrap import BubblewrapBackend
from toolrig.sandbox._docker import DockerBackend
from toolrig.sandbox._githooks import config_hooks_paths
from toolrig.sandbox._limits import SandboxLimits
from toolrig.sandbox._protect import check_protected
from toolrig.sandbox._python import python_files, python_result, runner_argv
from toolrig.sandbox._quarantine import quarantine_new, snapshot
from toolrig.sandbox._result import PythonResult, SandboxResult
from toolrig.sandbox._selftest import SelfTestReport, run_self_test
from toolrig.sandbox._wrap import WrappedCommand, check_wrappable, wrap_command

__all__ = ["Sandbox"]

log = logging.getLogger("toolrig.sandbox")
T = TypeVar("T")
_BACKENDS = ("auto", "bubblewrap", "docker")


def _call_sync(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to its end from synchronous code (in a thread of its own if a loop runs here)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no event loop in this thread
        return anyio.run(make)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = anyio.run(make)
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="toolrig-sandbox-sync")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


class Sandbox:
    """Runs commands and Python code in an OS sandbox (see :mod:`toolrig.sandbox` for what it promises).

    Before its first run, a sandbox tests itself (:meth:`check`): it refuses to run anything
    (:class:`~toolrig.sandbox.SandboxUnavailable`) unless every escape attempt failed. It never
    runs anything unsandboxed.

    Args:
        backend: ``"auto"`` (bubblewrap, else Docker where an engine answers), ``"bubblewrap"``,
            ``"docker"``, or a :class:`~toolrig.sandbox.Backend` object.
        limits: resource limits of each run (default: :class:`SandboxLimits` defaults).
        network: let runs use the host's network (default: none at all).
        workdir: a host directory bound read-write as the work dir ``/work`` (default: a fresh
            size-capped tmpfs per run, gone afterwards). Treat what a run leaves there as untrusted.
        ro_paths: host paths bound read-only at the same path in every run.
        protect: paths inside ``workdir`` (relative, e.g. ``".git/hooks"``) that stay read-only in every
            run where they exist; a path reached through a symbolic link is left out (it is not followed).
            See ``PROTECTED_IN_WORKDIR`` for the names a shell's root keeps.
        env: variables added to every run's minimal environment (``PATH``, ``HOME=/work``, ``LANG``).
        docker_image: the image of the Docker backend (must have ``python3`` for ``run_python``).
    """

    def __init__(self, *, backend: str | Backend = "auto", limits: SandboxLimits | None = None,
                 network: bool = False, workdir: str | Path | None = None, ro_paths: Sequence[str | Path] = (),
                 protect: Sequence[str] = (), env: Mapping[str, str] | None = None,
                 docker_image: str = DockerBackend.DEFAULT_IMAGE) -> None:
        if isinstance(backend, str) and backend not in _BACKENDS:
            raise ConfigError(f"unknown sandbox backend {backend!r}: use one of {', '.join(_BACKENDS)}")
        self.limits = limits or SandboxLimits()
        self.network = network
        self.workdir = Path(workdir).resolve() if workdir is not None else None
        if self.workdir is not None and not self.workdir.is_dir():
            raise ConfigError(f"the sandbox work dir {self.workdir} is not a directory")
        self.ro_paths = tuple(str(Path(p).resolve()) for p in ro_paths)
        self.protect = check_protected(protect)
        if self.protect and self.workdir is None:
            raise ConfigError("protect= names paths inside a work dir: give workdir= too")
        self.env = dict(env or {})
        if isinstance(backend, str):
            candidates: list[Backend] = []
            if backend in ("auto", "bubblewrap"):
                candidates.append(BubblewrapBackend())
            if backend in ("auto", "docker"):
                candidates.append(DockerBackend(image=docker_image))
        else:
            candidates = [backend]
        self._candidates = candidates
        self._chosen: Backend | None = None
        self._report: SelfTestReport | None = None

    # -- availability -----------------------------------------------------------------------------
    async def check(self) -> SelfTestReport:
        """Self-test the backend(s) once; the report of the chosen one (or of the first that failed)."""
        if self._report is not None:
            return self._report
        first: SelfTestReport | None = None
        for candidate in self._candidates:
            report = await run_self_test(candidate, mechanisms=candidate.mechanisms())
            if report.passed:
                self._chosen, self._report = candidate, report
                return report
            first = first or report
            log.warning("sandbox backend %s is not adequate here: %s", candidate.name, report.reason())
        assert first is not None
        self._report = first
        log.error("NO ADEQUATE SANDBOX on this machine; sandboxed tools will refuse to run: %s", first.reason())
        return first

    async def backend(self) -> Backend:
        """The backend that passed its self-test.

        Raises:
            SandboxUnavailable: none did (the reason names every failed check).
        """
        report = await self.check()
        if self._chosen is None:
            raise SandboxUnavailable(report.reason())
        return self._chosen

    @classmethod
    def self_test(cls, **options: Any) -> SelfTestReport:
        """Test the sandbox this machine offers (``options`` as for :class:`Sandbox`), synchronously."""
        sandbox = cls(**options)
        return _call_sync(sandbox.check)

    # -- runs -------------------------------------------------------------------------------------
    def _spec(self, argv: Sequence[str], *, stdin: bytes | str | None, cwd: str | None,
              env: Mapping[str, str] | None, timeout: float | None, limits: SandboxLimits | None,
              **more: Any) -> RunSpec:
        if isinstance(argv, str | bytes) or not argv or not all(isinstance(a, str) for a in argv):
            raise ConfigError("argv must be a non-empty sequence of strings (no shell: pass a list)")
        chosen = limits or self.limits
        if timeout is not None:
            chosen = chosen.with_changes(timeout=timeout)
        data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
        more.setdefault("ro_paths", self.ro_paths)
        protect = self.protect
        if self.workdir is not None and ".git/hooks" in protect:  # a hook manager's directory is hooks too
            protect = tuple(dict.fromkeys((*protect, *config_hooks_paths(self.workdir))))
        more.setdefault("protect", protect)
        return RunSpec(argv=tuple(argv), limits=chosen, stdin=data, cwd=cwd or WORKDIR,
                       env=minimal_env({**self.env, **(env or {})}), network=self.network, workdir=self.workdir,
                       **more)

    async def run(self, argv: Sequence[str], *, stdin: bytes | str | None = None, cwd: str | None = None,
                  env: Mapping[str, str] | None = None, timeout: float | None = None,
                  limits: SandboxLimits | None = None) -> SandboxResult:
        """Run ``argv`` (a list, paths as seen inside) in a fresh sandbox.

        Args:
            argv: the program and its arguments; never a shell string.
            stdin: fed to the program's stdin (default: ``/dev/null``).
            cwd: working directory inside (default: the work dir ``/work``).
            env: variables added to the minimal environment.
            timeout: wall-clock seconds (default: ``limits.timeout``).
            limits: limits for this run (default: the sandbox's).

        Raises:
            SandboxUnavailable: no adequate sandbox here; nothing ran.
            SandboxError: the sandbox could not be set up for this run.
        """
        backend = await self.backend()
        spec = self._spec(argv, stdin=stdin, cwd=cwd, env=env, timeout=timeout, limits=limits)
        return (await self._run(backend, spec)).result

    async def _run(self, backend: Backend, spec: RunSpec) -> RawRun:
        """One run; protected names it created in a host work dir are moved aside afterwards."""
        if spec.workdir is None or not spec.protect:
            return await backend.run(spec)
        workdir, protect = spec.workdir, spec.protect
        before = await anyio.to_thread.run_sync(lambda: snapshot(workdir, protect))
        raw = await backend.run(spec)
        moved = await anyio.to_thread.run_sync(lambda: quarantine_new(workdir, before))
        if moved:
            log.warning("a sandboxed run created protected names in %s; moved aside: %s", workdir, "; ".join(moved))
            raw = replace(raw, result=replace(raw.result, quarantined=tuple(moved)))
        return raw

    async def run_python(self, code: str, *, stdin: bytes | str | None = None, env: Mapping[str, str] | None = None,
                         timeout: float | None = None, limits: SandboxLimits | None = None,
                         python_path: Sequence[str | Path] = ()) -> PythonResult:
        """Run Python source with the host's interpreter (isolated: ``-I -S``) in a fresh sandbox.

        Returns stdout, stderr, the value of the last expression (as JSON data) and the exception
        the code raised, if any. ``python_path`` adds host directories (bound read-only) to ``sys.path``.

        Raises:
            SandboxUnavailable: no adequate sandbox here; nothing ran.
            SandboxError: the sandbox could not be set up for this run.
        """
        if not isinstance(code, str):
            raise ConfigError("code must be a string of Python source")
        backend = await self.backend()
        python, paths = backend.python()
        extra = tuple(str(Path(p).resolve()) for p in python_path)
        spec = self._spec(runner_argv(python, extra), stdin=stdin, cwd=None, env=env, timeout=timeout,
                          limits=limits, files=python_files(code), want_reply=True,
                          ro_paths=(*paths, *self.ro_paths, *extra))
        raw = await self._run(backend, spec)
        return python_result(raw.result, raw.reply)

    async def wrap(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | Path | None = None,
                   ro_paths: Sequence[str | Path] = (), rw_paths: Sequence[str | Path] = (),
                   network: bool | None = None, limits: SandboxLimits | None = None) -> WrappedCommand:
        """Prepare ``argv`` (a host command line) to run as a long-lived sandboxed program whose pipes you own.

        Nothing starts here: start the returned :attr:`~WrappedCommand.argv` with its
        :attr:`~WrappedCommand.env` (stdin, stdout and stderr are the program's), stop it when done, then
        call :meth:`~WrappedCommand.close`. The program gets what every run gets (see :mod:`toolrig.sandbox`)
        but no CPU-time limit, no timeout and no output cap; it sees what it needs to start (its executable
        found on the host, its interpreter, virtualenv or install prefix, the paths its arguments name),
        read-only, besides ``cwd`` and ``ro_paths``; it may write only ``rw_paths`` and its work dir.

        Args:
            argv: the program and its arguments, as the host would run them (``argv[0]`` found on ``PATH``).
            env: variables added to its minimal environment (``PATH`` here is also where ``argv[0]`` is looked for).
            cwd: a host directory, bound read-only, to start in (write access: list it in ``rw_paths`` too);
                default: an empty read-only directory at the host's current path.
            ro_paths: more host paths it may read (at the same path).
            rw_paths: host paths it may write (at the same path); what it leaves there is untrusted.
            network: share the host's network (default: the sandbox's ``network``).
            limits: its limits (default: the sandbox's); ``memory`` is also each process's address space,
                and Node needs at least 1 GiB of it.

        Raises:
            SandboxUnavailable: no adequate sandbox here, or one that cannot wrap (only bubblewrap can).
            SandboxError: the program is not on the host.
            ConfigError: ``cwd`` or a bound path does not exist or cannot be bound.
        """
        backend = check_wrappable(await self.backend())
        return wrap_command(backend, argv, limits=limits or self.limits, base_env=self.env, env=env, cwd=cwd,
                            ro_paths=(*self.ro_paths, *ro_paths), rw_paths=rw_paths,
                            network=self.network if network is None else network, workdir=self.workdir)

    def run_sync(self, argv: Sequence[str], **options: Any) -> SandboxResult:
        """:meth:`run` for synchronous code."""
        return _call_sync(lambda: self.run(argv, **options))

    def run_python_sync(self, code: str, **options: Any) -> PythonResult:
        """:meth:`run_python` for synchronous code."""
        return _call_sync(lambda: self.run_python(code, **options))
