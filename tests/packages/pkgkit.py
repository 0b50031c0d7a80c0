"""Building small tool packages for the tests: real wheels (zip + dist-info + RECORD) and sdists (tar.gz)."""

from __future__ import annotations

import base64
import hashlib
import io
import tarfile
import textwrap
import zipfile
from collections.abc import Mapping
from pathlib import Path

MANIFEST_HEAD = "[tool.toolrig]\n"


def manifest(tools: list[str], *, network: list[str] = (), read: list[str] = (), write: list[str] = (),  # type: ignore[assignment]
             subprocess: bool = False, env: list[str] = (), requires: list[str] = ()) -> str:  # type: ignore[assignment]
    """A ``[tool.toolrig]`` table as TOML text."""
    def arr(values: list[str]) -> str:
        return "[" + ", ".join(f'"{v}"' for v in values) + "]"

    return (f"[tool.toolrig]\ntools = {arr(tools)}\nrequires = {arr(list(requires))}\n"
            f"[tool.toolrig.capabilities]\nnetwork = {arr(list(network))}\n"
            f"filesystem = {{ read = {arr(list(read))}, write = {arr(list(write))} }}\n"
            f"subprocess = {'true' if subprocess else 'false'}\nenv = {arr(list(env))}\n")


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(out: Path, name: str, version: str, files: Mapping[str, str | bytes], *,
                entry_points: Mapping[str, str], toml: str | None = None, requires_dist: list[str] = (),  # type: ignore[assignment]
                manifest_in: str = "package") -> Path:
    """A wheel ``name-version-py3-none-any.whl`` in ``out`` with ``files`` (path -> text), a ``toolrig.tools``
    entry point per item, the manifest ``toml`` (in the first import package, or the .dist-info), and a RECORD."""
    dist = name.replace("-", "_")
    dist_info = f"{dist}-{version}.dist-info"
    content: dict[str, bytes] = {k: (textwrap.dedent(v).encode() if isinstance(v, str) else v)
                                 for k, v in files.items()}
    if toml is not None:
        top = next(iter(sorted(k.split("/")[0] for k in content if "/" in k)), None)
        where = f"{top}/toolrig.toml" if manifest_in == "package" and top else f"{dist_info}/toolrig.toml"
        content[where] = toml.encode()
    meta = [f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"]
    meta += [f"Requires-Dist: {r}\n" for r in requires_dist]
    content[f"{dist_info}/METADATA"] = "".join(meta).encode()
    content[f"{dist_info}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: toolrig-tests\nRoot-Is-Purelib: true\n"
                                     b"Tag: py3-none-any\n")
    eps = "[toolrig.tools]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items()) if entry_points else ""
    content[f"{dist_info}/entry_points.txt"] = eps.encode()
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in content.items())
    content[f"{dist_info}/RECORD"] = (record + f"{dist_info}/RECORD,,\n").encode()
    path = out / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in content.items():
            archive.writestr(member, data)
    return path


def build_sdist(out: Path, name: str, version: str, files: Mapping[str, str | bytes]) -> Path:
    """An sdist ``name-version.tar.gz`` in ``out`` holding ``files`` under ``name-version/``."""
    dist = name.replace("-", "_")
    path = out / f"{dist}-{version}.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for member, text in files.items():
            data = textwrap.dedent(text).encode() if isinstance(text, str) else text
            info = tarfile.TarInfo(f"{dist}-{version}/{member}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def pyproject(name: str, version: str, *, entry_points: Mapping[str, str], toml: str,
              dependencies: list[str] = (), extra: str = "") -> str:  # type: ignore[assignment]
    """A pyproject.toml for a tool package (hatchling), with its manifest."""
    deps = ", ".join(f'"{d}"' for d in dependencies)
    eps = "".join(f'{k} = "{v}"\n' for k, v in entry_points.items())
    return (f'[project]\nname = "{name}"\nversion = "{version}"\ndependencies = [{deps}]\n\n'
            f'[project.entry-points."toolrig.tools"]\n{eps}\n'
            f'[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n\n{extra}{toml}')
