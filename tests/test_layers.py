"""The architecture holds: import-linter's contracts (pyproject.toml), no import cycles, public APIs of others only."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "toolrig"


def test_the_import_contracts_are_kept() -> None:
    code = ("import sys; from importlinter.cli import lint_imports; "
            "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, no_logo=True))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_the_core_contract_names_every_core_module() -> None:
    """A new module at the top of the package must be placed in a layer, not slip past the contract."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    core = {c["id"]: c for c in config}["core"]["source_modules"]
    layered = {"cli", "policy", "sandbox", "guards", "runtime", "providers", "registry", "loading", "toolsets",
               "audit", "state", "mcp", "discovery", "builtins"}
    top = {p.stem for p in SRC.glob("*.py")} | {p.name for p in SRC.iterdir() if (p / "__init__.py").exists()}
    expected = {f"toolrig.{m}" for m in top - layered - {"__init__", "__main__"}}
    assert set(core) == expected


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
