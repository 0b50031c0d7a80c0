"""The shell guard reads every word the way bash does (quote removal on the source text).

Before: bashlex's ``word`` kept the quotes of a word that starts with a quote and holds ``''``
(``'-''exec'`` read as ``-''exec``), and the guard took it as the value. With
``shell_tool(root, allow=["find *", "cat *", "*"], deny=["rm *"])`` ``find . -maxdepth 0 '-''exec' touch X
';'`` created X, ``cat '.e''nv'`` printed ``.env``, ``'r''m' -f f`` deleted f past the deny list; ``rg
'--''pre=./evil' x``, ``tar '--''to-command=touch X' -xf a.tar``, ``echo x > '.ba''shrc'`` and ``'s''udo'
id`` were allowed. Generated words are compared against real bash in every word position.
"""

from __future__ import annotations

import shlex

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from shell_words import bash_fields, spelled, words

from toolrig.errors import CommandParseError
from toolrig.guards import CommandPolicy, ParsedCommand, parse_command

ISSUE = CommandPolicy(allow=["find *", "cat *", "*"], deny=["rm *"])
GENERATED = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
                     max_examples=300)


def _parsed(text: str) -> ParsedCommand | None:
    try:
        return parse_command(text)
    except CommandParseError:
        return None  # not understood: the policy asks


# -- the reported attacks, by name --------------------------------------------------------------------

def test_find_exec_split_by_empty_quotes_asks() -> None:
    decision = ISSUE.decide("find . -maxdepth 0 '-''exec' touch X ';'")
    assert decision.needs_approval and "-exec" in decision.reason


def test_cat_of_env_split_by_empty_quotes_asks() -> None:
    decision = ISSUE.decide("cat '.e''nv'")
    assert decision.needs_approval and "protected" in decision.reason


def test_rm_split_by_empty_quotes_hits_the_deny_rule() -> None:
    assert ISSUE.decide("'r''m' -f f").denied


def test_rg_pre_split_by_empty_quotes_asks() -> None:
    assert ISSUE.decide("rg '--''pre=./evil' x").needs_approval


def test_tar_to_command_split_by_empty_quotes_asks() -> None:
    assert ISSUE.decide("tar '--''to-command=touch X' -xf a.tar").needs_approval


def test_redirection_to_bashrc_split_by_empty_quotes_asks() -> None:
    decision = ISSUE.decide("echo x > '.ba''shrc'")
    assert decision.needs_approval and "protected" in decision.reason


def test_sudo_split_by_empty_quotes_is_denied() -> None:
    assert ISSUE.decide("'s''udo' id").denied


# -- held-out spellings, every position ---------------------------------------------------------------

RM_SPELLINGS = ['"r"m', "r\\m", "$'\\x72m'", '$"rm"', "r''''m", "'r'm", "r'm'", '"r""m"', "$'r'm", "$'\\162m'",
                "$'\\u0072m'", "$'\\U00000072m'", "$'\\x{72}m'", "r\\\nm", "''rm", "rm''", "r$''m", "\\r\\m",
                "'r'\"m\"", '"rm"', "$'rm'", "r\"\"m", "r'''m'"]


@pytest.mark.parametrize("word", RM_SPELLINGS)
def test_every_spelling_of_rm_is_read_as_rm(word: str) -> None:
    parsed = parse_command(f"{word} -f f")
    assert parsed.commands[0].argv[0] == "rm"
    assert ISSUE.decide(f"{word} -f f").denied
    assert ISSUE.decide(f"nice {word} -f f").denied
    assert ISSUE.decide(f"bash -c {shlex.quote(word + ' -f f')}").denied


@pytest.mark.parametrize(("template", "value", "verdict"), [
    ("find . {} touch X ';'", "-exec", "ask"),
    ("find . {} touch X ';'", "-execdir", "ask"),
    ("find . {}", "-delete", "ask"),
    ("rg {} x", "--pre=./evil", "ask"),
    ("rg --pre {} x", "./evil", "ask"),
    ("tar {} -xf a.tar", "--to-command=touch X", "ask"),
    ("git {} log", "-c", "ask"),
    ("git -c {} log", "core.pager=touch X", "ask"),
    ("cat {}", ".env", "ask"),
    ("cat {}", ".ssh/id_rsa", "ask"),
    ("cp evil {}", ".git/hooks/pre-commit", "ask"),
    ("dd {} of=x", "if=.env", "ask"),
    ("echo x > {}", ".bashrc", "ask"),
    ("echo x >> {}", ".github/workflows/ci.yml", "ask"),
    ("cat < {}", ".env", "ask"),
    ("cat <<< x > {}", ".zshrc", "ask"),
    ("cd {} && echo x > hooks/pre-commit", ".git", "ask"),
    ("cd {} && cat id_rsa", ".ssh", "ask"),
    ("{} id", "sudo", "deny"),
    ("{} -rf /", "rm", "deny"),
    ("{} x", "vim", "deny"),
    ("sh -c {}", "rm -f f", "deny"),
    ("eval {}", "rm -f f", "deny"),
    ("xargs {} < list", "rm", "deny"),
    ("timeout 5 {} -f f", "rm", "deny"),
    ("X=1 {} -f f", "rm", "deny"),
    ("python3 {} 'print(1)'", "-c", "ask"),
    ("split {}=id f", "--filter", "ask"),
])
def test_quoted_spellings_in_every_position(template: str, value: str, verdict: str) -> None:
    """A handful of fixed spellings of each value, in each position (the generated test below adds more)."""
    for word in (f"'{value[:1]}''{value[1:]}'", f'"{value[:1]}"{value[1:]}', "$'" + "".join(
            f"\\x{ord(c):02x}" for c in value) + "'", f"{value[:1]}''{value[1:]}''", f'$"{value}"'):
        decision = ISSUE.decide(template.replace("{}", word))
        assert decision.decision == verdict, (template, word, decision.reason)


def test_a_here_string_and_an_assignment_value_are_read_like_bash() -> None:
    parsed = parse_command("cat <<< '.e''nv'")
    assert parsed.commands[0].redirects[0].target == ".env"
    parsed = parse_command("X='a''b'$'\\x63' env")
    assert parsed.commands[0].assignments == ("X=abc",) and parsed.commands[0].argv == ("env",)
    assert parse_command("env 'A''B=1' ls").commands[-1].assignments == ("AB=1",)


def test_a_subscripted_assignment_before_the_command_is_an_assignment() -> None:
    """``a[0]=1 rm x`` runs rm (bash reads ``a[0]=1`` as an array assignment; bashlex as the command)."""
    parsed = parse_command("a[0]=1 rm -f f")
    assert parsed.commands[0].assignments == ("a[0]=1",) and parsed.commands[0].argv == ("rm", "-f", "f")
    assert ISSUE.decide("a[0]=1 rm -f f").denied
    assert ISSUE.decide("a[$(touch X)]=1 ls").needs_approval


def test_a_quoted_here_document_delimiter_is_not_misread() -> None:
    """bash ends the body at the line ``EOF`` (the delimiter's value) and runs what follows; bashlex
    waited for the raw ``'E''OF'`` and took ``rm`` for part of the body."""
    line = "cat <<'E''OF'\nEOF\nrm -f f\n'E''OF'\n"
    assert ISSUE.decide(line).decision in ("ask", "deny")
    assert CommandPolicy(allow=["*"]).decide("cat <<E\\OF\nEOF\nrm -f f\nE\\OF\n").needs_approval


@pytest.mark.parametrize(("word", "value"), [
    ("$'\\x41\\102\\u0043\\U00000044\\x{45}'", "ABCDE"), ("$'a\\'b'", "a'b"), ("$'\\q'", "\\q"), ("$'\\x'", "\\x"),
    ("$'\\xg'", "\\xg"), ("$'\\u'", "\\u"), ("$'\\e'", "\x1b"), ("$'\\1010'", "A0"),
    ("\"a\\b\\$\\`\\\"\\\\\"", "a\\b$`\"\\"),
    ("'\\'", "\\"), ("a\\\nb", "ab"), ("\"a\\\nb\"", "ab"), ("$", "$"), ("\"$\"", "$"), ("a$", "a$"), ("\"$/\"", "$/"),
    ("\\~", "~"), ("a~", "a~"), ("'~'", "~"), ("{}", "{}"), ("@{u}", "@{u}"), ("a=b", "a=b"), ("--x=~", "--x=~"),
])
def test_literal_words(word: str, value: str) -> None:
    command = parse_command(f"printf '%s\\0' {word}").commands[0]
    assert command.argv[2:] == (value,) and not command.dynamic
    assert bash_fields(f"printf '%s\\0' {word}") == [value]


@pytest.mark.parametrize("word", [
    "$x", "a${x}b", "\"$x\"", "$(id)", "`id`", "~", "~/a", "x=~", "x=a:~", "a[1]=~", "*.py", "a?", "[ab]", "{a,b}",
    "{1..3}", '$"x"', "$'\\xff'", "$'\\200'", "$'\\u00e9'", "$'\\0'", "$'a\\x00b'", "$'\\ca'", "$1", "$@", "\"$@\"",
    "<(id)",
])
def test_computed_words(word: str) -> None:
    command = next(c for c in parse_command(f"printf '%s\\0' {word}").commands if c.name == "printf")
    assert command.dynamic == {2}, command
    assert ISSUE.decide(f"printf '%s\\0' {word}").needs_approval


# -- generated words compared against bash, in every position ----------------------------------------

def _single(text: str) -> ParsedCommand | None:
    """``text`` parsed, when it is exactly one simple command (the word did not end it early)."""
    parsed = _parsed(text)
    if parsed is None or len(parsed.commands) != 1 or parsed.commands[0].source != text:
        return None
    return parsed


def _argument(word: str) -> None:
    parsed = _single(f"set -- {word}")
    assume(parsed is not None and not parsed.commands[0].redirects)
    assert parsed is not None
    command = parsed.commands[0]
    assume(command.argv[:2] == ("set", "--") and not command.dynamic)
    fields = bash_fields(f"set -- {word}\nprintf '%s\\0' \"$#\" \"$@\"")
    assert fields == [str(len(command.argv) - 2), *command.argv[2:]], (word, command.argv)


def _command_name(word: str) -> None:
    parsed = _single(f"-zq{word} a")
    assume(parsed is not None and not parsed.commands[0].redirects)
    assert parsed is not None
    command = parsed.commands[0]
    assume(not command.dynamic and not command.assignments and "/" not in command.argv[0])
    fields = bash_fields(f"command_not_found_handle() {{ printf '%s\\0' \"$@\"; }}\n-zq{word} a")
    assert fields == list(command.argv), (word, command.argv)


def _assignment(word: str) -> None:
    parsed = _single(f"X={word}")
    assume(parsed is not None and not parsed.commands[0].redirects)
    assert parsed is not None
    command = parsed.commands[0]
    assume(not command.argv and len(command.assignments) == 1)
    # an assignment's value is read like the same word as an argument (`printf %s X=...` expands `~`
    # after `=` and `:` too); assignments always ask, so only the argument form records "computed"
    same = _single(f"printf %s X={word}")
    assume(same is not None and not same.commands[0].dynamic and same.commands[0].argv[2:] == command.assignments)
    fields = bash_fields(f"X={word}\nprintf '%s\\0' \"$X\"")
    assert ["X=" + f for f in fields] == list(command.assignments), (word, command.assignments)


def _here_string(word: str) -> None:
    parsed = _single(f"cat <<< {word}")
    assume(parsed is not None)
    assert parsed is not None
    redirects = parsed.commands[0].redirects
    assume(len(redirects) == 1 and not redirects[0].dynamic and parsed.commands[0].argv == ("cat",))
    fields = bash_fields(f"cat <<< {word}\nprintf '\\0'")
    assert fields == [f"{redirects[0].target}\n"], (word, redirects[0].target)


def _redirect_target(word: str) -> None:
    parsed = _single(f": > {word}")
    assume(parsed is not None)
    assert parsed is not None
    redirects = parsed.commands[0].redirects
    assume(len(redirects) == 1 and not redirects[0].dynamic and redirects[0].target is not None)
    target = redirects[0].target
    assert target is not None
    assume(target not in ("", ".", "..") and "/" not in target and len(target.encode()) < 200)
    fields = bash_fields(f"shopt -s dotglob nullglob\n: > {word}\nprintf '%s\\0' *")
    assert fields == [target], (word, target)


POSITIONS = {"argument": _argument, "command name": _command_name, "assignment": _assignment,
             "here-string": _here_string, "redirection target": _redirect_target}


@GENERATED
@given(word=words(), position=st.sampled_from(sorted(POSITIONS)))
@example(word="'a''b'", position="argument").via("the reported form")
@example(word="'-''exec'", position="command name").via("the reported form")
@example(word="$'\\x72'm", position="assignment").via("ANSI-C")
@example(word="'.ba''shrc'", position="redirection target").via("the reported form")
@example(word="'.e''nv'", position="here-string").via("the reported form")
def test_a_literal_word_has_the_value_bash_gives_it(word: str, position: str) -> None:
    """Whenever the guard calls a word literal (not computed), bash gives it exactly that value."""
    POSITIONS[position](word)


@GENERATED
@given(data=st.data(), target=st.sampled_from(["rm", "sudo", "vim", "shutdown", "su"]))
def test_generated_spellings_of_a_denied_program_are_denied(data: st.DataObject, target: str) -> None:
    word = data.draw(spelled(target))
    assert ISSUE.decide(f"{word} x").denied, word
    assert ISSUE.decide(f"ls; {word} x").denied, word
    assert bash_fields(f"printf '%s\\0' {word}") == [target]


PROTECTED_USES = [("cat {}", ".env"), ("cat {}", ".ssh/id_rsa"), ("echo x > {}", ".bashrc"), ("tee {}", ".zshrc"),
                  ("cp a {}", ".git/hooks/pre-commit"), ("cat {}", ".aws/credentials"), ("echo x >> {}", ".envrc"),
                  ("find . {} id ';'", "-exec"), ("find . {} id {} +", "-execdir"), ("rg {} x", "--pre=./evil"),
                  ("tar {} -xf a.tar", "--to-command=id"), ("git {} x log", "-c"), ("split {} f", "--filter=id"),
                  ("sort {} f", "--compress-program=./evil"), ("cd {} && echo x > ci.yml", ".github/workflows")]


@GENERATED
@given(data=st.data(), use=st.sampled_from(PROTECTED_USES))
def test_generated_spellings_of_risky_options_and_protected_names_ask(data: st.DataObject,
                                                                      use: tuple[str, str]) -> None:
    template, value = use
    word = data.draw(spelled(value))
    line = template.replace("{}", word, 1).replace("{}", "{}")
    decision = ISSUE.decide(line)
    assert decision.needs_approval, (line, decision.reason)
    assert bash_fields(f"printf '%s\\0' {word}") == [value]
