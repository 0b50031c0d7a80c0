"""The mistakes a new user makes end with one clear line on stderr and exit 1: never a traceback, never a
parser's multi-line dump. Each is run as the user runs it, in a real ``toolrig`` subprocess."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WEATHER = REPO / "examples" / "weather_tools.py"

# A line indented one space too little: the commonest YAML typo.
BAD_INDENT = "line 3, column 2: expected <block end>, but found '<block mapping start>'"


def toolrig(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLRIG_")}
    env["TOOLRIG_MCP_STATE"] = str(cwd / "mcp.db")
    return subprocess.run([sys.executable, "-m", "toolrig", *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env=env, stdin=subprocess.DEVNULL, check=False)


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, (done.returncode, done.stderr)
    lines = [line for line in done.stderr.splitlines() if not line.startswith("WARNING ")]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: "), done.stderr
    assert "Traceback" not in done.stderr and "<unicode string>" not in done.stderr
    return lines[0]


def test_a_policy_file_with_a_yaml_typo(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("allow:\n  - read_file\n deny: [shell]\n", encoding="utf-8")
    line = one_line_error(toolrig("policy", "explain", "read_file", "--config", str(policy), cwd=tmp_path))
    assert line == f"error: {policy}: not valid YAML: {BAD_INDENT} (while parsing a block mapping that starts at " \
                   "line 1, column 1)"


def test_a_workflow_with_a_yaml_typo(tmp_path: Path) -> None:
    flow = tmp_path / "flow.yaml"
    flow.write_text("name: brief\nsteps:\n - id: today\n   tool: get_weather\n  args: {}\n", encoding="utf-8")
    line = one_line_error(toolrig("workflow", "check", str(flow), "--from", str(WEATHER), cwd=tmp_path))
    assert line.startswith(f"error: {flow}: not valid YAML: line 5, column 3: "), line


def test_a_command_bundle_with_a_yaml_typo_served_from_a_config(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "config.yaml").write_text("tools:\n  find_def:\n    docstring: Find a definition.\n"
                                        "   command: [grep, -rn, x, .]\n", encoding="utf-8")
    config = tmp_path / "toolrig.toml"
    config.write_text(f'[builtins]\nroot = "."\nbundles = ["{bundle}"]\n', encoding="utf-8")
    line = one_line_error(toolrig("serve", "--config", str(config), "--stdio", cwd=tmp_path))
    assert f"{bundle / 'config.yaml'}: not valid YAML: line 4, column 4: expected <block end>" in line, line


@pytest.mark.parametrize("how", ["--tools", "config"])
def test_tools_that_do_not_exist_name_the_setting(tmp_path: Path, how: str) -> None:
    if how == "--tools":
        args = ["serve", "--stdio", "--tools", "my_tols.py"]
    else:
        (tmp_path / "toolrig.toml").write_text('[tools]\nmodules = ["my_tols.py"]\n', encoding="utf-8")
        args = ["serve", "--stdio", "--config", "toolrig.toml"]
    line = one_line_error(toolrig(*args, cwd=tmp_path))
    assert line.startswith("error: cannot serve the tools of 'my_tols.py' (--tools or [tools] modules): "), line
    assert "LoadError" not in line and "no such file or directory" in line


def test_forgetting_a_package_that_is_not_pinned_says_so(tmp_path: Path) -> None:
    line = one_line_error(toolrig("package", "forget", "toolrig-wether", cwd=tmp_path))
    assert line == "error: tool package 'toolrig-wether' is not pinned (pinned: none)"


def test_verifying_a_package_installed_elsewhere_names_this_environment(tmp_path: Path) -> None:
    line = one_line_error(toolrig("package", "verify", "toolrig-weather", cwd=tmp_path))
    assert line == f"error: tool package 'toolrig-weather' is not installed in this Python environment ({sys.prefix})"


def test_call_takes_from_as_describe_and_check_do(tmp_path: Path) -> None:
    """`describe` and `check` accept `-f SOURCE`; a user who learnt that there is not told `No such option` by
    `call`, and its help names its options as the docs do (SOURCE, JSON), not `<str>`."""
    done = toolrig("call", "get_weather", "-f", str(WEATHER), "--args", '{"city": "Oslo"}', "--json", "--no-audit",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert '"ok": true' in done.stdout
    shown = toolrig("call", "--help", cwd=tmp_path).stdout
    assert "-f, --from SOURCE" in shown and "--args JSON" in shown and "--from <str>" not in shown, shown


def test_an_audit_kind_with_a_typo_is_not_an_empty_table(tmp_path: Path) -> None:
    done = toolrig("audit", "--db", str(tmp_path / "audit.db"), "--kind", "denyed", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: --kind 'denyed': not an outcome; choose one of: ok, not_found, ")
    assert done.stderr.count("\n") == 1 and "denied" in done.stderr


def test_a_postgres_audit_log_without_the_extra_names_it(tmp_path: Path) -> None:
    """As on a machine without psycopg: the import finds nothing (sys.modules[name] = None is how Python marks a
    module that cannot be imported)."""
    script = ("import sys; sys.modules['psycopg'] = None\nfrom toolrig.cli import main\n"
              "main(['audit', '--db', 'postgresql://reader@127.0.0.1:1/ops'])")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          check=False)
    assert one_line_error(done) == ("error: a postgresql:// audit log needs psycopg: pip install 'toolrig[postgres]' "
                                    "(or uv sync --extra postgres)")


def test_a_postgres_server_that_is_down_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    line = one_line_error(toolrig("audit", "--db", f"postgresql://reader@127.0.0.1:{port}/ops", cwd=tmp_path))
    assert line.startswith(f"error: cannot read the audit log at postgresql://reader@127.0.0.1:{port}/ops"), line


@pytest.mark.parametrize("command", [["approvals", "list"], ["approvals", "approve", "3f9a1c07d2"]])
def test_an_approval_queue_that_is_down_is_named_without_its_password(tmp_path: Path, command: list[str]) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    line = one_line_error(toolrig(*command, "--queue", f"redis://:s3cret@127.0.0.1:{port}/0", cwd=tmp_path))
    assert line.startswith(f"error: cannot reach the approval queue at redis://127.0.0.1:{port}/0: "), line
    assert "s3cret" not in line


def closed_port() -> int:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("command", [["mcp", "list"], ["mcp", "call", "URL", "get_weather"], ["scan"],
                                     ["search", "weather", "--mcp"]])
def test_an_mcp_server_that_is_down_is_one_line_with_the_cause(tmp_path: Path, command: list[str]) -> None:
    """Not three warnings and then 'MCPError: Connection closed': the one line says the connection was refused."""
    url = f"http://127.0.0.1:{closed_port()}/mcp"
    argv = [url if a == "URL" else a for a in command] + ([] if "URL" in command else [url])
    line = one_line_error(toolrig(*argv, cwd=tmp_path))
    assert "ConnectError: cannot connect to 127.0.0.1:" in line and "Connection closed" not in line, line


def test_scanning_a_config_that_does_not_exist(tmp_path: Path) -> None:
    line = one_line_error(toolrig("scan", "toolrig.tolm.toml", cwd=tmp_path))
    assert line == "error: no such config file: toolrig.tolm.toml"


def _stopped_by(tmp_path: Path, args: list[str], ready: str, how: signal.Signals, code: int, *,
                stdin: int) -> str:
    """Run ``toolrig ARGS`` until its stderr shows ``ready`` (polled, at most 120 s), send ``how``, check the exit
    code; its stderr."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLRIG_")}
    env["TOOLRIG_MCP_STATE"] = str(tmp_path / "mcp.db")
    log = tmp_path / "stderr.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "toolrig", *args], cwd=tmp_path, env=env, stdin=stdin,
                                stdout=subprocess.DEVNULL, stderr=err)
        try:
            for _ in range(1200):
                if ready in log.read_text(encoding="utf-8", errors="replace") or proc.poll() is not None:
                    break
                time.sleep(0.1)
            proc.send_signal(how)
            assert proc.wait(timeout=60) == code, log.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
            if proc.stdin is not None:
                proc.stdin.close()
    text = log.read_text(encoding="utf-8")
    assert "Traceback" not in text
    return text


@pytest.mark.parametrize(("how", "code", "said"), [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGINT, 130, "Ctrl-C")])
@pytest.mark.parametrize("transport", ["--http", "--stdio"])
def test_serve_says_how_it_stopped(tmp_path: Path, how: signal.Signals, code: int, said: str, transport: str) -> None:
    """Stopped by SIGTERM or Ctrl-C, `toolrig serve` ends with one line saying so (no traceback) and 143 / 130."""
    args = ["serve", "--root", str(tmp_path), *(["--http", "127.0.0.1:0"] if transport == "--http" else ["--stdio"])]
    text = _stopped_by(tmp_path, args, "Inspect it with", how, code, stdin=subprocess.PIPE)
    assert text.splitlines()[-1] == f"toolrig serve: stopped ({said})", text


def test_a_root_that_is_a_file_is_not_called_missing(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    line = one_line_error(toolrig("serve", "--stdio", "--root", "notes.txt", cwd=tmp_path))
    assert line == "error: --root 'notes.txt': a file, not a folder; give the folder the file tools may work in"


@pytest.mark.parametrize(("how", "code", "said"), [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGINT, 130, "Ctrl-C")])
def test_the_console_says_how_it_stopped(tmp_path: Path, how: signal.Signals, code: int, said: str) -> None:
    pytest.importorskip("starlette")
    text = _stopped_by(tmp_path, ["console", "--root", str(tmp_path)], "this run's password", how, code,
                       stdin=subprocess.DEVNULL)
    assert text.splitlines()[-1] == f"toolrig console: stopped ({said})", text
