"""Install, pin, load: only what passed the scan installs; only what still matches its pin loads; its tools run
sandboxed with the declared hosts as their only network."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from pkgkit import build_wheel, manifest
from typer.testing import CliRunner

from toolrig import Isolation, ToolCall, Trust
from toolrig.cli import app
from toolrig.errors import LoadError, URLDenied
from toolrig.guards import URLRules
from toolrig.mcp import open_pins
from toolrig.packages import PACKAGE_KEY, check_package, install_package
from toolrig.registry import Registry
from toolrig.runtime import Executors, Runtime, minimal_stages
from toolrig.sandbox import EGRESS_KEY, BubblewrapBackend, Sandbox, SandboxExecutor, SandboxLimits

FETCH = '''
import urllib.request

from toolrig import tool


@tool
def fetch(url: str) -> str:
    """GET a URL (through an opener: a call the scan cannot tie to a host)."""
    opener = urllib.request.build_opener()
    try:
        with opener.open(url, timeout=5) as response:
            return f"{response.status} {response.read().decode()}"
    except urllib.error.HTTPError as exc:
        return f"{exc.code} {exc.read().decode()[:120]}"


@tool
def home() -> str:
    """GET the declared API's home page."""
    with urllib.request.urlopen("http://api.allowed.test:PORT/home", timeout=5) as response:
        return response.read().decode()
'''


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"hello {self.headers.get('Host', '').split(':')[0]} {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[int]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def venv(tmp_path: Path) -> tuple[str, str]:
    """A fresh virtual environment (offline): its python and its site-packages."""
    where = tmp_path / "venv"
    subprocess.run(["uv", "venv", "--offline", "--quiet", "--python", sys.executable, str(where)], check=True,
                   timeout=120)
    python = str(where / "bin" / "python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    return python, site


@pytest.fixture
def pins(tmp_path: Path) -> Any:
    return open_pins(tmp_path / "pins.db")


def weather_wheel(out: Path, port: int, *, name: str = "toolrig-weather", version: str = "1.0.0",
                  requires: list[str] = (), module: str = "weather_pkg") -> Path:  # type: ignore[assignment]
    refs = {"fetch": f"{module}.tools:fetch", "home": f"{module}.tools:home"}
    out.mkdir(parents=True, exist_ok=True)
    return build_wheel(out, name, version, {f"{module}/__init__.py": "",
                                            f"{module}/tools.py": FETCH.replace("PORT", str(port))},
                       entry_points=refs, toml=manifest(list(refs.values()), network=["api.allowed.test"],
                                                        requires=list(requires)),
                       requires_dist=list(requires))


def install(wheel: Path, venv: tuple[str, str], pins: Any) -> Any:
    return install_package(str(wheel), python=venv[0], pins=pins, deps=False, offline=True)


def test_a_passing_wheel_installs_pins_and_loads_sandboxed(tmp_path: Path, venv: tuple[str, str], pins: Any,
                                                           monkeypatch: pytest.MonkeyPatch, server: int) -> None:
    result = install(weather_wheel(tmp_path / "w", server), venv, pins)
    assert result.installed, result.problems
    record = pins.package_pin("toolrig-weather")
    assert record["version"] == "1.0.0" and "weather_pkg/tools.py" in record["hashes"]
    monkeypatch.syspath_prepend(venv[1])
    registry = Registry()
    tools = registry.load_package("toolrig-weather", pins=pins, path=[venv[1]])
    assert sorted(t.name for t in tools) == ["fetch", "home"]
    for tool in tools:
        assert tool.spec.isolation is Isolation.SANDBOX and tool.spec.trust is Trust.EXTERNAL
        assert list(tool.spec.metadata[EGRESS_KEY]) == ["api.allowed.test"]
        assert tool.spec.metadata[PACKAGE_KEY] == {"name": "toolrig-weather", "version": "1.0.0"}
    assert registry.source_of(tools[0]) == "package:toolrig-weather"


def _sandbox() -> Sandbox:
    reason = BubblewrapBackend().unavailable_reason()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"bubblewrap must work under CI: {reason}")
        pytest.skip(f"no bubblewrap here: {reason}")
    return Sandbox(backend="bubblewrap", limits=SandboxLimits(timeout=20))


def _resolver(host: str) -> list[str]:
    if host.endswith(".test"):
        return ["127.0.0.1"]
    raise URLDenied("resolve_failed", host, "offline test resolver")


def test_the_declared_hosts_are_the_only_network_when_sandboxed(tmp_path: Path, venv: tuple[str, str], pins: Any,
                                                                monkeypatch: pytest.MonkeyPatch, server: int) -> None:
    assert install(weather_wheel(tmp_path / "w", server), venv, pins).installed
    monkeypatch.syspath_prepend(venv[1])
    registry = Registry()
    registry.load_package("toolrig-weather", pins=pins, path=[venv[1]])
    executor = SandboxExecutor(_sandbox(), egress_rules=URLRules.build(allow_endpoints=[f"127.0.0.1:{server}"]),
                               egress_resolver=_resolver)

    async def main() -> list[str]:
        async with Runtime(registry, stages=minimal_stages(), executors=Executors(sandbox=executor),
                           audit=False) as rt:
            calls = [ToolCall(name="home", arguments={}),
                     ToolCall(name="fetch", arguments={"url": f"http://api.allowed.test:{server}/v1/x"}),
                     ToolCall(name="fetch", arguments={"url": f"http://collector.test:{server}/steal"})]
            outcomes = [await rt.call(c) for c in calls]
        assert all(o.ok for o in outcomes), outcomes
        return [o.result.text for o in outcomes]

    home, allowed, denied = anyio.run(main)
    assert home == "hello api.allowed.test /home"
    assert allowed == "200 hello api.allowed.test /v1/x"
    assert denied.startswith("403 toolrig egress: collector.test is not among the hosts")


def test_a_changed_or_added_file_is_refused(tmp_path: Path, venv: tuple[str, str], pins: Any,
                                            monkeypatch: pytest.MonkeyPatch, server: int) -> None:
    assert install(weather_wheel(tmp_path / "w", server), venv, pins).installed
    monkeypatch.syspath_prepend(venv[1])
    check_package("toolrig-weather", pins=pins, path=[venv[1]])
    module = Path(venv[1]) / "weather_pkg" / "tools.py"
    original = module.read_text()
    module.write_text(original + "\nimport os\nos.system('id')\n")
    with pytest.raises(LoadError, match=r"weather_pkg/tools\.py changed since the scan"):
        Registry().load_package("toolrig-weather", pins=pins, path=[venv[1]])
    module.write_text(original)
    check_package("toolrig-weather", pins=pins, path=[venv[1]])
    (Path(venv[1]) / "weather_pkg" / "extra.py").write_text("x = 1\n")
    with pytest.raises(LoadError, match=r"weather_pkg/extra\.py was added after the scan"):
        Registry().load_package("toolrig-weather", pins=pins, path=[venv[1]])
    (Path(venv[1]) / "weather_pkg" / "extra.py").unlink()
    (Path(venv[1]) / "toolrig_weather_boot.pth").write_text("import os\n")
    (Path(venv[1]) / "toolrig_weather-1.0.0.dist-info" / "RECORD").open("a").write("toolrig_weather_boot.pth,,\n")
    with pytest.raises(LoadError, match=r"a \.pth file"):
        check_package("toolrig-weather", pins=pins, path=[venv[1]])


def test_an_unpinned_package_never_loads(tmp_path: Path, venv: tuple[str, str], pins: Any,
                                         monkeypatch: pytest.MonkeyPatch, server: int) -> None:
    wheel = weather_wheel(tmp_path / "w", server)
    subprocess.run(["uv", "pip", "install", "--quiet", "--offline", "--no-deps", "--python", venv[0], str(wheel)],
                   check=True, timeout=120)
    monkeypatch.syspath_prepend(venv[1])
    with pytest.raises(LoadError, match="never scanned and pinned"):
        Registry().load_package("toolrig-weather", pins=pins, path=[venv[1]])
    with pytest.raises(LoadError, match="not installed"):
        Registry().load_package("toolrig-nothing", pins=pins, path=[venv[1]])


def test_a_blocked_wheel_is_not_installed(tmp_path: Path, venv: tuple[str, str], pins: Any) -> None:
    wheel = build_wheel(tmp_path, "toolrig-speedups", "1.0.0",
                        {"speedups_pkg/__init__.py": "", "speedups_pkg/tools.py": "from toolrig import tool\n",
                         "toolrig_speedups.pth": "import os; os.system('id')\n"},
                        entry_points={"x": "speedups_pkg.tools:x"}, toml=manifest(["speedups_pkg.tools:x"]))
    result = install(wheel, venv, pins)
    assert not result.installed and "does not pass the scan" in result.problems[0]
    assert not (Path(venv[1]) / "toolrig_speedups.pth").exists()
    assert pins.package_pin("toolrig-speedups") is None


def test_required_tool_packages_must_be_installed_and_pinned_first(tmp_path: Path, venv: tuple[str, str],
                                                                   pins: Any, monkeypatch: pytest.MonkeyPatch,
                                                                   server: int) -> None:
    maps = weather_wheel(tmp_path / "maps", server, name="toolrig-maps", requires=["toolrig-geo>=1.2"],
                         module="maps_pkg")
    refused = install(maps, venv, pins)
    assert not refused.installed and "requires toolrig-geo>=1.2" in refused.problems[0]
    old = install(weather_wheel(tmp_path / "geo-old", server, name="toolrig-geo", version="1.1.0", module="geo_pkg"),
                  venv, pins)
    assert old.installed
    assert "but 1.1.0 is installed" in install(maps, venv, pins).problems[0]
    geo = weather_wheel(tmp_path / "geo", server, name="toolrig-geo", version="1.3.0", module="geo_pkg")
    assert install(geo, venv, pins).installed
    assert install(maps, venv, pins).installed
    monkeypatch.syspath_prepend(venv[1])
    check_package("toolrig-maps", pins=pins, path=[venv[1]])
    pins.forget_package("toolrig-geo")
    with pytest.raises(LoadError, match=r"toolrig-maps' requires toolrig-geo>=1\.2"):
        check_package("toolrig-maps", pins=pins, path=[venv[1]])


def test_the_cli_installs_verifies_lists_and_forgets(tmp_path: Path, venv: tuple[str, str],
                                                      monkeypatch: pytest.MonkeyPatch, server: int) -> None:
    monkeypatch.setenv("TOOLRIG_MCP_STATE", str(tmp_path / "cli-pins.db"))
    wheel = weather_wheel(tmp_path / "w", server)
    runner = CliRunner()
    done = runner.invoke(app, ["package", "install", str(wheel), "--python", venv[0], "--no-deps", "--offline"])
    assert done.exit_code == 0, done.output
    assert "installed and pinned toolrig-weather 1.0.0" in done.output
    listed = runner.invoke(app, ["package", "list"])
    assert "toolrig-weather 1.0.0" in listed.output
    assert runner.invoke(app, ["package", "forget", "toolrig_weather"]).exit_code == 0
    assert "no tool packages are pinned" in runner.invoke(app, ["package", "list"]).output
    missing = runner.invoke(app, ["package", "install", str(tmp_path / "nope.whl")])
    assert missing.exit_code == 2


def test_an_installed_package_is_adopted_by_scanning_its_installed_files(pins: Any) -> None:
    """``toolrig-plugin-demo`` is installed in the dev environment by ``uv sync``, not by toolrig."""
    from toolrig.packages import pin_installed

    with pytest.raises(LoadError, match="never scanned"):
        Registry().load_package("toolrig-plugin-demo", pins=pins)
    result = pin_installed("toolrig-plugin-demo", pins=pins)
    assert result.installed, result.problems
    assert "toolrig_plugin_demo/__init__.py" in pins.package_pin("toolrig-plugin-demo")["hashes"]
    tools = Registry().load_package("toolrig-plugin-demo", pins=pins, isolation=None)
    assert sorted(t.name for t in tools) == ["shout", "whisper"]
    assert all(t.spec.isolation is Isolation.INLINE and t.spec.trust is Trust.EXTERNAL for t in tools)


def test_an_installed_package_that_fails_the_scan_is_not_adopted(tmp_path: Path, venv: tuple[str, str],
                                                                  pins: Any) -> None:
    from toolrig.packages import pin_installed

    wheel = build_wheel(tmp_path, "toolrig-uptime", "1.0.0",
                        {"uptime_pkg/__init__.py": "", "uptime_pkg/tools.py": "from os import system as s\ns('id')\n"},
                        entry_points={"x": "uptime_pkg.tools:x"}, toml=manifest(["uptime_pkg.tools:x"]))
    subprocess.run(["uv", "pip", "install", "--quiet", "--offline", "--no-deps", "--python", venv[0], str(wheel)],
                   check=True, timeout=120)
    result = pin_installed("toolrig-uptime", pins=pins, path=[venv[1]])
    assert not result.installed
    assert "undeclared-subprocess" in {f.rule for f in result.reports[0].blocking}
    assert pins.package_pin("toolrig-uptime") is None


def test_capabilities_become_sandbox_settings_and_replace_the_tools_own(tmp_path: Path) -> None:
    from toolrig import tool
    from toolrig.packages import Capabilities, apply_capabilities
    from toolrig.sandbox import ENV_KEY, PATHS_KEY

    @tool(metadata={EGRESS_KEY: ["evil.example"], PATHS_KEY: {"root": "/", "write": ["/"]}})
    def sneaky() -> str:
        """Claims more than its manifest."""
        return "x"

    caps = Capabilities(network=("api.example",), read=("data/",), write=("out/",), env=("TOKEN",))
    applied = apply_capabilities(sneaky, caps, {"name": "p", "version": "1"}, isolation="sandbox", root=tmp_path)
    meta = applied.spec.metadata
    assert list(meta[EGRESS_KEY]) == ["api.example"] and list(meta[ENV_KEY]) == ["TOKEN"]
    assert dict(meta[PATHS_KEY]) == {"root": str(tmp_path), "read": [str(tmp_path / "data")],
                                     "write": [str(tmp_path / "out")]}
    bare = apply_capabilities(sneaky, Capabilities(), {"name": "p", "version": "1"}, isolation="sandbox")
    assert EGRESS_KEY not in bare.spec.metadata and PATHS_KEY not in bare.spec.metadata
