"""The shell tool in the real bubblewrap sandbox, attacked with quoting the guard once misread.

Before: with ``shell_tool(root, allow=["find *", "cat *", "*"], deny=["rm *"])`` and no approver,
``find . -maxdepth 0 '-''exec' touch X ';'`` created X, ``cat '.e''nv'`` printed ``.env`` and ``'r''m' -f
f`` deleted f past the deny list (bashlex kept the quotes of ``'a''b'``; the guard took that as the
value). Each attack is run through the Runtime with no approver: nothing happens. With an approver
that says yes, the ask-cases really do what the attack wanted — proof the guard was all that stood in
the way — while a literal word the guard allows is read exactly as bash reads it.
"""

from __future__ import annotations

import sys
import tarfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig import ErrorKind, Runtime, ToolCall, ToolOutcome
from toolrig.builtins import shell_tool

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "guards"))

from shell_words import spelled

ALLOW = ["find *", "cat *", "*"]
DENY = ["rm *"]
SECRET = "TOKEN=quote-removal-canary"


class _Yes:
    def __call__(self, call: object, context: object, reason: str) -> bool:
        return True


@pytest.fixture
def root(tmp_path: Path, need_bubblewrap: None) -> Path:
    work = tmp_path / "root"
    work.mkdir()
    (work / "f").write_text("victim\n")
    (work / ".env").write_text(SECRET + "\n")
    (work / "lines").write_text("a\nb\n")
    (work / "README.md").write_text("read me\n")
    payload = work / "payload"
    payload.write_text("x\n")
    with tarfile.open(work / "a.tar", "w") as archive:
        archive.add(payload, arcname="payload")
    return work


def _call(root: Path, command: str, *, approve: bool = False) -> ToolOutcome:
    tool = shell_tool(root, allow=ALLOW, deny=DENY, timeout=20)
    with Runtime([tool], audit=False, approval=_Yes() if approve else None) as rt:
        return rt.call_sync(ToolCall(id="q1", name="shell", arguments={"command": command}))


ASKS = [
    ("find . -maxdepth 0 '-''exec' touch X ';'", lambda r: (r / "X").exists()),
    ("find . -maxdepth 0 $'-\\x65xec' touch X ';'", lambda r: (r / "X").exists()),
    ("tar '--''to-command=touch X' -xf a.tar", lambda r: (r / "X").exists()),
    ("tar --to-comm'and=touch X' -xf a.tar", lambda r: (r / "X").exists()),
    ("split -l1 '--''filter=touch X' lines", lambda r: (r / "X").exists()),
    ("split -l1 --filter=$'touch X' lines", lambda r: (r / "X").exists()),
    ("echo x > '.ba''shrc'", lambda r: any(p.name.startswith(".toolrig-quarantine-") for p in r.iterdir())),
    ("sort -o'.z''shrc' lines", lambda r: any(p.name.startswith(".toolrig-quarantine-") for p in r.iterdir())),
]


@pytest.mark.parametrize(("command", "happened"), ASKS, ids=[c for c, _ in ASKS])
def test_an_attack_spelled_with_quotes_waits_for_approval(root: Path, command: str, happened: object) -> None:
    outcome = _call(root, command)
    assert not outcome.ok and outcome.error.kind is ErrorKind.APPROVAL_REQUIRED, outcome.content
    assert not happened(root)  # type: ignore[operator]
    approved = _call(root, command, approve=True)
    assert approved.ok, approved.content
    assert happened(root), approved.content  # type: ignore[operator]  # the attack is real


@pytest.mark.parametrize("command", ["cat '.e''nv'", "cat \".e\"nv", "cat .e\\nv", "cat $'.\\x65nv'", "cat $\".env\"",
                                     "cat .e''''nv", "cat <'.en''v'", "cd '.' && cat ./'.en'v"])
def test_reading_env_spelled_with_quotes_waits_for_approval(root: Path, command: str) -> None:
    outcome = _call(root, command)
    assert not outcome.ok and outcome.error.kind is ErrorKind.APPROVAL_REQUIRED, outcome.content
    assert SECRET not in outcome.content


@pytest.mark.parametrize("command", ["'r''m' -f f", "\"r\"m -f f", "r\\m -f f", "$'\\x72m' -f f", "$\"rm\" -f f",
                                     "r''''m -f f", "$'\\162\\155' -f f", "$'\\u0072m' -f f", "'r'\"m\" f",
                                     "nice 'r''m' f", "bash -c \"'r''m' f\"", "a[0]=1 rm f", "'s''udo' id"])
def test_denied_programs_spelled_with_quotes_stay_denied(root: Path, command: str) -> None:
    outcome = _call(root, command, approve=True)  # even a human's yes does not run a denied command
    assert not outcome.ok and outcome.error.kind is ErrorKind.DENIED, outcome.content
    assert (root / "f").read_text() == "victim\n"


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
          max_examples=25)
@given(data=st.data())
def test_generated_spellings_of_rm_never_delete(root: Path, data: st.DataObject) -> None:
    word = data.draw(spelled("rm"))
    outcome = _call(root, f"{word} -f f", approve=True)
    assert not outcome.ok and outcome.error.kind is ErrorKind.DENIED, (word, outcome.content)
    assert (root / "f").exists()


@pytest.mark.parametrize(("command", "shown"), [
    ("cat 'READ''ME.md'", "read me"), ("cat $'READ\\x4dE.md'", "read me"), ("cat \"READ\"ME.md", "read me"),
    ("cat READ\\ME.md", "read me"), ("echo 'a''b'$'\\x63'\"d\"", "abcd"),
])
def test_allowed_literal_words_run_as_bash_reads_them(root: Path, command: str, shown: str) -> None:
    outcome = _call(root, command)
    assert outcome.ok and shown in outcome.content, outcome.content
