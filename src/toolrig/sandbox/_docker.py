"""The Docker backend: one ``docker run --rm`` container per run, for machines with an engine but no bubblewrap.

Each container gets no network (``--network none`` unless allowed), a read-only root, all
capabilities dropped, ``no-new-privileges``, uid/gid 65534, memory (no swap), CPU and process
limits, rlimits as ``--ulimit``, size-capped tmpfs ``/tmp`` and work dir, and only the files a run
needs, mounted read-only. A run that times out or floods its output is ``docker kill``-ed; the
container is removed afterwards in every case (``--rm``, then ``docker rm -f`` to be sure).
Python code runs with the image's interpreter (default image: :attr:`DockerBackend.DEFAULT_IMAGE`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import uuid
from pathlib import Path

import anyio
import anyio.to_thread

from toolrig.errors import SandboxError, SandboxUnavailable
from toolrig.sandbox._backend import REPLY_ENV, WORKDIR, RawRun, RunSpec
from toolrig.sandbox._protect import protected_host_paths
from toolrig.sandbox._result import SandboxResult
from toolrig.sandbox._supervise import supervise

__all__ = ["DockerBackend", "docker_argv"]

_REPLY_DIR = "/run/toolrig-reply"
_MAX_REPLY = 64 << 20
_DOCKER_FAILED = 125


def docker_argv(docker: str, image: str, name: str, spec: RunSpec, mounts: list[tuple[str, str, str]]) -> list[str]:
    """The ``docker run`` command line for ``spec``; ``mounts`` are (host, inside, "ro"|"rw")."""
    limits = spec.limits
    args = [docker, "run", "--rm", "--name", name, "--network", "bridge" if spec.network else "none",
            "--memory", str(limits.memory), "--memory-swap", str(limits.memory), "--cpus", "1",
            "--pids-limit", str(limits.pids), "--read-only", "--cap-drop", "ALL",
            "--security-opt", "no-new-privileges", "--user", "65534:65534", "--init",
            "--ulimit", f"nofile={limits.open_files}:{limits.open_files}",
            "--ulimit", f"fsize={limits.file_size}:{limits.file_size}", "--ulimit", "core=0:0",
            "--ulimit", f"cpu={limits.cpu}:{limits.cpu}",
            "--tmpfs", f"/tmp:rw,nosuid,nodev,size={limits.disk},mode=1777", "--workdir", spec.cwd]
    if spec.stdin is not None:
        args.append("--interactive")
    if spec.workdir is None:
        args += ["--tmpfs", f"{WORKDIR}:rw,nosuid,nodev,size={limits.disk},mode=1777"]
    else:
        mounts = [(str(spec.workdir), WORKDIR, "rw"), *mounts,
                  *((host, f"{WORKDIR}/{os.path.relpath(host, spec.workdir)}", "ro")
                    for host in protected_host_paths(spec.workdir, spec.protect))]
    for host, inside, mode in mounts:
        args += ["--mount", f"type=bind,source={host},target={inside},{'readonly' if mode == 'ro' else 'rw'}"]
    for key, value in spec.env.items():
        args += ["--env", f"{key}={value}"]
    return [*args, "--", image, *spec.argv]


class DockerBackend:
    """Sandboxes with Docker containers (used where an engine answers; see the module docstring).

    Args:
        image: the image every run uses.
        docker: path of the ``docker`` client (default: found on ``PATH``).
    """

    name = "docker"
    DEFAULT_IMAGE = "python:3.12-slim"

    def __init__(self, *, image: str = DEFAULT_IMAGE, docker: str | None = None) -> None:
        self.image = image
        self._docker = docker
        self._reason: str | None = None
        self._probed = False

    def _client(self) -> str | None:
        return self._docker or shutil.which("docker")

    def unavailable_reason(self) -> str | None:
        if not self._probed:
            self._probed = True
            self._reason = self._probe()
        return self._reason

    def _probe(self) -> str | None:
        client = self._client()
        if client is None:
            return "the docker client is not installed"
        try:
            done = subprocess.run([client, "version", "--format", "{{.Server.Version}}"], capture_output=True,
                                  text=True, timeout=15, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"docker cannot be run: {exc}"
        if done.returncode != 0 or not done.stdout.strip():
            first = (done.stderr.strip().splitlines() or ["no answer"])[0]
            return f"no Docker engine answers ({first[:200]})"
        return None

    def python(self) -> tuple[str, tuple[str, ...]]:
        return "python3", ()

    def mechanisms(self) -> dict[str, str]:
        return {"pids": "--pids-limit", "memory": "--memory (no swap)", "disk": "tmpfs size=",
                "seccomp": "Docker's default profile", "nested userns": "--cap-drop ALL, Docker's seccomp profile"}

    async def run(self, spec: RunSpec) -> RawRun:
        reason = self.unavailable_reason()
        client = self._client()
        if reason or client is None:
            raise SandboxUnavailable(reason or "the docker client is not installed")
        scratch = Path(tempfile.mkdtemp(prefix="toolrig-docker-"))
        name = f"toolrig-sandbox-{uuid.uuid4().hex[:16]}"
        try:
            return await self._run(client, spec, scratch, name)
        finally:
            await anyio.to_thread.run_sync(lambda: subprocess.run(
                [client, "rm", "--force", name], capture_output=True, timeout=60, check=False))
            shutil.rmtree(scratch, ignore_errors=True)

    async def _run(self, client: str, spec: RunSpec, scratch: Path, name: str) -> RawRun:
        mounts = [(p, p, "ro") for p in spec.ro_paths] + [(p, p, "rw") for p in spec.rw_paths]
        for index, (inside, data) in enumerate(spec.files.items()):
            host = scratch / f"file{index}"
            host.write_bytes(data)
            host.chmod(0o444)
            mounts.append((str(host), inside, "ro"))
        env = dict(spec.env)
        reply_file = scratch / "reply" / "reply.json"
        if spec.want_reply:
            reply_file.parent.mkdir()
            reply_file.parent.chmod(0o777)
            mounts.append((str(reply_file.parent), _REPLY_DIR, "rw"))
            env[REPLY_ENV] = f"file:{_REPLY_DIR}/reply.json"
        argv = docker_argv(client, self.image, name, RunSpec(**{**spec.__dict__, "env": env}), mounts)
        proc = await anyio.open_process(argv, stdin=subprocess.PIPE if spec.stdin is not None else subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                             **{k: v for k, v in os.environ.items() if k.startswith("DOCKER_")}},
                                        start_new_session=True)
        killers: list[subprocess.Popen[bytes]] = []

        def kill() -> None:
            if not killers:
                killers.append(subprocess.Popen([client, "kill", name], stdout=subprocess.DEVNULL,
                                                stderr=subprocess.DEVNULL))
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGTERM)

        try:
            seen = await supervise(proc, limits=spec.limits, kill=kill, stdin=spec.stdin)
        finally:
            for killer in killers:
                await anyio.to_thread.run_sync(killer.wait)
        if seen.returncode == _DOCKER_FAILED and not seen.kill_reason:
            text = bytes(seen.stderr.data).decode("utf-8", "replace").strip()
            raise SandboxError(f"docker could not start the container: {text[-2000:]}")
        result = SandboxResult(
            exit_code=None if seen.kill_reason else seen.returncode, stdout=bytes(seen.stdout.data),
            stderr=bytes(seen.stderr.data), stdout_truncated=seen.stdout.truncated,
            stderr_truncated=seen.stderr.truncated, timed_out=seen.timed_out, killed=bool(seen.kill_reason),
            kill_reason=seen.kill_reason, duration=seen.duration, backend=self.name,
            limits={**spec.limits.__dict__, **self.mechanisms()})
        reply = None
        if spec.want_reply and reply_file.is_file() and reply_file.stat().st_size <= _MAX_REPLY:
            reply = reply_file.read_bytes()
        return RawRun(result, reply)
