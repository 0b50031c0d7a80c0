"""The architecture holds: import-linter's contracts (pyproject.toml), no import cycles, public APIs of others only."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "toolrig"


def test_the_import_contracts_are_kept() -> None:
    code = ("import sys; from importlinter.cli import lint_imports; "
            "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, no_logo=True))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def _contracts() -> dict[str, dict[str, object]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    return {c["id"]: c for c in config}


def _packages() -> set[str]:
    """The packages (and public modules above the core) that take a layer: everything but the root's own modules."""
    return {p.name for p in SRC.iterdir() if (p / "__init__.py").exists() and not p.name.startswith("_")} | {"loading"}


def test_every_package_has_a_layer_and_the_core_is_everything_else() -> None:
    """A new package must be placed in a layer; a new root module is core by where it lands (no list to extend)."""
    contracts = _contracts()
    layered = {name.strip() for layer in contracts["layers"]["layers"] for name in str(layer).split("|")}  # type: ignore[attr-defined]
    assert layered == _packages()
    protected = {m.removeprefix("toolrig.") for m in contracts["core"]["protected_modules"]}  # type: ignore[attr-defined]
    importers = {m.removeprefix("toolrig.") for m in contracts["core"]["allowed_importers"]}  # type: ignore[attr-defined]
    assert protected == _packages() and importers == _packages() | {"__main__"}
    for contract in contracts.values():  # packages, not hand-listed modules
        for key in ("source_modules", "forbidden_modules", "protected_modules", "allowed_importers"):
            assert all(not part.startswith("_") or part == "__main__"
                       for m in contract.get(key, ()) for part in str(m).split(".")), (contract["id"], key)


def _lint_a_copy(tmp_path: Path, probes: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run lint-imports on a copy of the source tree with ``probes`` (path under toolrig/ -> text) added."""
    copy = tmp_path / "src"
    shutil.copytree(SRC, copy / "toolrig", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    for where, text in probes.items():
        target = copy / "toolrig" / where
        target.write_text(text + "\n" if not target.exists() else target.read_text() + "\n" + text + "\n")
    code = ("import sys; from importlinter.cli import lint_imports; "
            "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, no_logo=True))")
    env = {**os.environ, "PYTHONPATH": str(copy)}
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          check=False, env=env)


SDK_PROBE = "import openai\nimport anthropic\nimport google.genai"
NOT_SDK_PACKAGES = sorted(_packages() - {"providers", "mcp", "loading"})


@pytest.mark.parametrize("package", [*NOT_SDK_PACKAGES, "loading", "core"])
def test_a_provider_sdk_imported_outside_providers_and_mcp_breaks_the_contracts(tmp_path: Path,
                                                                                package: str) -> None:
    where = {"loading": "loading.py", "core": "_calls.py"}.get(package, f"{package}/_sdk_probe.py")
    done = _lint_a_copy(tmp_path, {where: SDK_PROBE})
    assert done.returncode != 0, done.stdout
    for sdk in ("openai", "anthropic", "google"):
        assert f"-> {sdk} (l." in done.stdout, (sdk, done.stdout)


def test_the_sdk_contracts_allow_only_their_own_package(tmp_path: Path) -> None:
    """The mcp SDK only in toolrig.mcp, provider SDKs only in toolrig.providers."""
    done = _lint_a_copy(tmp_path, {"providers/_sdk_probe.py": SDK_PROBE, "mcp/_sdk_probe.py": "import mcp_types",
                                   "runtime/_sdk_probe.py": "import mcp", "providers/_mcp_probe.py": "import mcp"})
    assert done.returncode != 0
    broken = done.stdout
    assert "toolrig.runtime._sdk_probe -> mcp (l." in broken and "toolrig.providers._mcp_probe -> mcp (l." in broken
    assert "toolrig.providers._sdk_probe ->" not in broken and "toolrig.mcp._sdk_probe ->" not in broken


def test_a_private_module_of_another_package_or_a_layer_from_the_core_breaks_the_contracts(tmp_path: Path) -> None:
    done = _lint_a_copy(tmp_path, {"policy/_private_probe.py": "from toolrig.state._base import StateBackend",
                                   "runtime/_private_probe.py": "import toolrig.audit._writer",
                                   "_core_probe.py": "from toolrig.toolsets import Toolset",
                                   "state/_layer_probe.py": "from toolrig.runtime import Runtime"})
    assert done.returncode != 0
    for link in ("toolrig.policy._private_probe -> toolrig.state._base", "toolrig.runtime._private_probe -> "
                 "toolrig.audit._writer", "toolrig._core_probe -> toolrig.toolsets", "toolrig.state._layer_probe -> "
                 "toolrig.runtime"):
        assert link in done.stdout, (link, done.stdout)


def test_the_source_tree_copy_alone_keeps_every_contract(tmp_path: Path) -> None:
    """The probes above break the contracts, not the copying."""
    done = _lint_a_copy(tmp_path, {})
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_module_imports_one_that_imports_it() -> None:
    graph = grimp.build_graph("toolrig", exclude_type_checking_imports=True)
    packages = {m for m in graph.modules if (SRC.parent / m.replace(".", "/") / "__init__.py").exists()}
    cycles = []
    for module in sorted(graph.modules - packages):
        for other in graph.find_modules_directly_imported_by(module) - packages:
            if other != module and graph.chain_exists(importer=other, imported=module):
                cycles.append((module, other))
    assert cycles == [], f"import cycles (module -> module it imports, which leads back): {cycles[:10]}"


def test_no_private_names_of_other_projects() -> None:
    """Speed from design, not from internals that break silently on an upgrade."""
    pattern = re.compile(r"\b_attributes_set|\b_PydanticGeneralMetadata|c_make_encoder|\b_TRACER_PROVIDER"
                         r"|current_async_library_cvar")
    hits = [f"{p.relative_to(REPO)}:{n}" for p in SRC.rglob("*.py")
            for n, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert hits == []


def test_modules_stay_small() -> None:
    """About 400 lines at most per module (STYLE.md)."""
    big = {str(p.relative_to(SRC)): n for p in SRC.rglob("*.py") if (n := len(p.read_text().splitlines())) > 420}
    assert big == {}


def test_test_modules_have_unique_names() -> None:
    """pytest imports test modules by basename (rootdir-relative prepend mode): two of a name break collection."""
    names = [p.name for p in (REPO / "tests").rglob("test_*.py")]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []


def test_mcp_is_only_its_four_layers() -> None:
    """``toolrig.mcp`` holds its ``__init__`` and four sub-packages (gateway, server, client, shared), each a layer
    of the ``mcp-layers`` contract: a module added at its top would sit outside every layer."""
    mcp = SRC / "mcp"
    assert {p.name for p in mcp.iterdir() if p.is_file() and p.suffix == ".py"} == {"__init__.py"}
    parts = {p.name for p in mcp.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert parts == set(_contracts()["mcp-layers"]["layers"])  # type: ignore[arg-type]
