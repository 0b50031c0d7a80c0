"""Credentials on command lines and in config snippets are redacted, the secret part only; ordinary flags are not.

Each family is tried with other spellings (quoting, flag forms, case, names, secrets) by hypothesis: the rules
must fit the class of leak, not the examples.
"""

from __future__ import annotations

import base64
import re
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig import CallContext, ToolCall, tool
from toolrig.redact import DEFAULT_REDACTOR, redact_text, redact_value
from toolrig.runtime import Runtime

MARKER = re.compile(r"\[REDACTED:[a-z_]+\]")


def shown(text: str) -> str:
    """``text`` redacted, without its markers (a marker's name may spell a secret's letters)."""
    return MARKER.sub("", redact_text(text))


SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=200)

# (text, the secret, parts that must stay readable)
LEAKS = [
    ("curl -u user:pass https://api.example.test", "pass", ["curl -u user:", "https://api.example.test"]),
    ("curl --user=admin:hunter2 https://x.test", "hunter2", ["--user=admin:"]),
    ("curl -s --user 'admin:pa ss w0rd' https://x.test", "pa ss w0rd", ["--user 'admin:", "https://x.test"]),
    ('curl -uadmin:s3cr3t -X POST https://x.test', "s3cr3t", ["-uadmin:", "-X POST"]),
    ("curl --proxy-user bob:pr0xyPW https://x.test", "pr0xyPW", ["--proxy-user bob:"]),
    ("http --auth alice:wonderland GET x.test", "wonderland", ["--auth alice:"]),
    ("mysql -u root -pPASS123 shop", "PASS123", ["mysql -u root -p", "shop"]),
    ("mysqldump -h db -uroot -p'S3cr et' shop > dump.sql", "S3cr et", ["mysqldump -h db -uroot -p", "shop"]),
    ("mysql --password=PASS123 -u root", "PASS123", ["mysql --password=", "-u root"]),
    ("mariadb --password PASS123", "PASS123", ["mariadb --password "]),
    ("sshpass -p Hunter2 ssh admin@host.test", "Hunter2", ["sshpass -p ", "ssh admin@host.test"]),
    ("sshpass -pHunter2 scp f host.test:", "Hunter2", ["sshpass -p", "scp f"]),
    ("sshpass -p Hunter2 ssh -p 2222 host.test", "Hunter2", ["ssh -p 2222 host.test"]),
    ("curl --user-agent 'a:b' -u bob:Pw9x https://x.test", "Pw9x", ["--user-agent 'a:b' -u bob:"]),
    ("PGPASSWORD=hunter2 psql -h db -U app", "hunter2", ["PGPASSWORD=", "psql -h db -U app"]),
    ("env MYSQL_PWD='x y z' mysql -u root", "x y z", ["MYSQL_PWD=", "mysql -u root"]),
    ("SSHPASS=Hunter2 sshpass -e ssh host", "Hunter2", ["SSHPASS=", "sshpass -e"]),
    ("export REDISCLI_AUTH=r3dis", "r3dis", ["export REDISCLI_AUTH="]),
    ("keytool -list -keystore ks.jks -storepass changeit", "changeit", ["-storepass ", "-keystore ks.jks"]),
    ("java -jar app.jar -password Sup3r", "Sup3r", ["-password "]),
    ("gh api --token XYZ987abc /user", "XYZ987abc", ["--token ", "/user"]),
    ("tool --api-key=0a1b2c3d --verbose", "0a1b2c3d", ["--api-key=", "--verbose"]),
    ("tool --client-secret \"s e c\"", "s e c", ["--client-secret "]),
    ("tool --DB-PASSWORD x9y8z7", "x9y8z7", ["--DB-PASSWORD "]),
    ("Authorization: Basic dTpw", "dTpw", ["Authorization: Basic "]),
    ("curl -H 'Authorization: Basic YTpi' https://x.test", "YTpi", ["Authorization: Basic", "https://x.test"]),
    ("proxy-authorization: bearer abc", "abc", ["proxy-authorization: bearer "]),
    ("Authorization: tok3n-raw", "tok3n-raw", ["Authorization: "]),
    ('{"Authorization": "Basic dTpw"}', "dTpw", ['"Authorization": "Basic ']),
    ("git clone https://user:ghtoken123@github.example/org/repo.git", "ghtoken123", ["git clone https://user:",
                                                                                     "@github.example/org/repo.git"]),
    ("https://user:p@ss@host.test/x", "p@ss", ["https://user:", "@host.test/x"]),
    ("machine api.example.test login bob password s3cret", "s3cret", ["machine api.example.test login bob password "]),
    ("machine h.test\n  login bob\n  password s3cret\n", "s3cret", ["machine h.test\n  login bob\n  password "]),
    ("machine h.test password s3cret login bob", "s3cret", ["machine h.test password ", " login bob"]),
    ("default login anonymous password me@example.test", "me@example.test", ["default login anonymous password "]),
    ("docker login -u bob -p hunter2 registry.example.test", "hunter2", ["docker login -u bob -p ",
                                                                          "registry.example.test"]),
    ("podman login --username bob --password hunter2 reg.test", "hunter2", ["--password "]),
    ("redis-cli -h cache -a r3dis PING", "r3dis", ["redis-cli -h cache -a ", "PING"]),
    ("ldapsearch -x -D cn=admin -w Adm1n -b dc=x", "Adm1n", ["-w ", "-b dc=x"]),
    ("openssl enc -aes256 -pass pass:hunter2 -in f", "hunter2", ["openssl enc -aes256 -pass "]),
    ("dbPassword: hunter2", "hunter2", ["dbPassword: "]),
    ("-Djavax.net.ssl.keyStorePassword=chang3it", "chang3it", ["keyStorePassword="]),
]


@pytest.mark.parametrize(("text", "secret", "kept"), LEAKS, ids=[t for t, _, _ in LEAKS])
def test_credentials_on_command_lines_and_in_config_snippets_are_redacted(text: str, secret: str,
                                                                          kept: list[str]) -> None:
    out = redact_text(text)
    assert secret not in shown(text), out
    assert "[REDACTED:" in out
    for part in kept:
        assert part in out, (part, out)
    assert redact_text(out) == out


BENIGN = [
    "grep -p pattern file", "ls -p /tmp", "cmd --password-file /run/secrets/db", "docker login --password-stdin reg",
    "curl -u alice https://x.test", "curl -u alice: https://x.test", "curl --upload-file a.txt https://x.test",
    "psql --no-password mydb", "mysql -p shop", "mysql -P 3306 -h db", "docker run -u 1000:1000 -p 8080:80 img",
    "docker exec -u root:root box sh", "sort -u names.txt", "ps -u alice", "tar -cpf a.tar d",
    "PWD=/home/alice make", "BYPASS=1 ./run", "mysql --protocol=tcp", "openssl enc -passin file:/etc/pw -in f",
    "openssl enc -passin env:PW -in f", "tool --password $DB_PASS", "tool --token \"${GH_TOKEN}\"",
    "PGPASSWORD=$PGPASS psql", "llm --max-tokens 512", "llm --max-token 5", "nextToken: abc123",
    "the machine learning password strength meter", "by default password logins are off",
    "see https://example.test/a%20b?x=1&y=2", "Authorization header is missing", "ssh -p 2222 host",
    "ssh -i ~/.ssh/id_ed25519 host", "sshpass -f pw.txt ssh -p 2222 host",
    "curl --user-agent x/1 -XPUT https://x.test", "gh auth login -p ssh",
    "--private-key ~/.ssh/id_rsa", "pip install -U pip", "hasPassword: true",
]


@pytest.mark.parametrize("text", BENIGN)
def test_ordinary_flags_and_text_are_left_alone(text: str) -> None:
    assert redact_text(text) == text


# -- the same families, other spellings -------------------------------------------------------------------
# A secret starts with "Q9" and ends with "9Q" (nothing else in the texts has a Q): a secret redacted only in part
# leaves one of them.
_SECRET = st.text(st.sampled_from("abcXYZ0189!#%*+,-.:=@^_~/"), max_size=12).map(lambda s: f"Q9{s}9Q")
_QUOTED_SECRET = st.text(st.sampled_from("abcXYZ0189 !#%*+,-.:=@^_~/;|&"), max_size=12).map(lambda s: f"Q9{s}9Q")


def leaked(text: str) -> bool:
    rest = shown(text)
    return "Q9" in rest or "9Q" in rest
_USER = st.text(st.sampled_from("abcdefxyz019_."), min_size=1, max_size=8)


def _quote(value: str, how: str) -> str:
    return {"bare": value, "double": f'"{value}"', "single": f"'{value}'"}[how]


@st.composite
def flag_leaks(draw: st.DrawFn) -> tuple[str, str]:
    """A command line with a secret in a secret-named flag (any case, prefix, = or space, quoting)."""
    word = draw(st.sampled_from(["password", "passwd", "pass", "pwd", "token", "secret", "api-key", "api_key",
                                 "apikey", "access-key", "secret-key", "passphrase", "storepass", "keypass"]))
    prefix = draw(st.sampled_from(["", "db-", "http_", "proxy-", "admin-", "auth-", "access-"]))
    flag = draw(st.sampled_from(["--", "-"])) + draw(st.sampled_from([str.lower, str.upper, str.title]))(prefix + word)
    how = draw(st.sampled_from(["bare", "double", "single"]))
    secret = draw(_SECRET if how == "bare" else _QUOTED_SECRET)
    sep = draw(st.sampled_from(["=", " ", "  ", "\t"]))
    command = draw(st.sampled_from(["tool", "mysql -h db", "wget -q", "psql", "java -jar a.jar", "vault login"]))
    tail = draw(st.sampled_from(["", " --verbose", " https://x.test/a", "\nnext line"]))
    return f"{command} {flag}{sep}{_quote(secret, how)}{tail}", secret


@st.composite
def tool_leaks(draw: st.DrawFn) -> tuple[str, str]:
    """A tool whose short flag (or user:password value) carries the secret."""
    how = draw(st.sampled_from(["bare", "double", "single"]))
    secret = draw(_SECRET if how == "bare" else _QUOTED_SECRET)
    user = draw(_USER)
    form = draw(st.sampled_from(["curl", "mysql", "sshpass", "docker", "redis", "ldap", "env", "netrc", "auth"]))
    before = draw(st.sampled_from(["", "sudo ", "time ", "/usr/bin/"]))
    if form == "curl":
        flag = draw(st.sampled_from(["-u ", "-u", "--user ", "--user=", "-U ", "--proxy-user="]))
        value = f"{user}:{secret}" if how == "bare" else _quote(f"{user}:{secret}", how)
        text = f"{before}curl -sS {flag}{value} https://api.test/x"
    elif form == "mysql":
        cmd = draw(st.sampled_from(["mysql", "mysqldump", "mysqladmin", "mariadb", "mariadb-dump"]))
        text = f"{before}{cmd} -h db -u {user} -p{_quote(secret, how)} shop"
    elif form == "sshpass":
        text = f"{before}sshpass -p{draw(st.sampled_from(['', ' ']))}{_quote(secret, how)} ssh {user}@h.test"
    elif form == "docker":
        cmd = draw(st.sampled_from(["docker", "podman", "helm registry", "nerdctl"]))
        text = f"{before}{cmd} login -u {user} -p {_quote(secret, how)} reg.test"
    elif form == "redis":
        text = f"{before}redis-cli -h cache -a {_quote(secret, how)} PING"
    elif form == "ldap":
        text = f"{before}ldapsearch -x -D cn={user} -w {_quote(secret, how)} -b dc=x"
    elif form == "env":
        name = draw(st.sampled_from(["PGPASSWORD", "MYSQL_PWD", "SSHPASS", "DB_PASS", "API_TOKEN", "APP_SECRET",
                                     "REDISCLI_AUTH", "AWS_SECRET_ACCESS_KEY", "PASSWORD", "RSYNC_PASSWORD"]))
        text = f"{draw(st.sampled_from(['', 'export ', 'env ']))}{name}={_quote(secret, how)} psql -h db"
    elif form == "netrc":
        if how != "bare":
            secret = secret.replace(" ", "_")  # .netrc values have no spaces
        space = draw(st.sampled_from([" ", "\n  ", "\n\t", "  "]))
        order = draw(st.booleans())
        rest = (f"login {user}{space}password {secret}" if order else f"password {secret}{space}login {user}")
        text = f"machine h.test{space}{rest}\n"
    else:
        scheme = draw(st.sampled_from(["Basic", "basic", "BASIC", "Bearer", "Token", ""]))
        token = base64.b64encode(secret.encode()).decode() if scheme.lower() == "basic" else secret.replace(" ", "")
        secret = token
        header = draw(st.sampled_from(["Authorization", "authorization", "AUTHORIZATION", "Proxy-Authorization"]))
        text = f"{header}: {scheme + ' ' if scheme else ''}{token}\r\nAccept: */*"
    return text, secret


@SETTINGS
@given(flag_leaks())
def test_secret_flags_in_any_spelling_are_redacted(case: tuple[str, str]) -> None:
    text, _ = case
    out = redact_text(text)
    assert not leaked(text), out
    assert redact_text(out) == out


@SETTINGS
@given(tool_leaks())
def test_tool_specific_credentials_in_any_spelling_are_redacted(case: tuple[str, str]) -> None:
    text, secret = case
    out = redact_text(text)
    assert secret not in shown(text), out
    assert not secret.startswith("Q9") or not leaked(text), out
    assert redact_text(out) == out


_BENIGN_PIECES = st.sampled_from([
    "grep", "-p", "ls", "-la", "--password-file", "/run/secrets/db", "curl", "-u", "alice", "https://x.test/a%20b",
    "mysql", "shop", "sort", "-U", "docker", "run", "--verbose", "password", "token", "the", "machine", "logout",
    "note", "--password-stdin", "PWD=/tmp", "ssh", "-i", "key.pem", "&amp;", "x", "1000", "--max-tokens",
    "512", "--no-password", "\n", "Authorization", "header", "is", "missing",
])


@SETTINGS
@given(st.lists(_BENIGN_PIECES, max_size=30).map(" ".join))
def test_redaction_never_changes_a_secret_free_text(text: str) -> None:
    assert redact_text(text) == text


@SETTINGS
@given(st.lists(st.one_of(_BENIGN_PIECES, flag_leaks().map(lambda c: c[0]), tool_leaks().map(lambda c: c[0]),
                          st.text(max_size=12)), max_size=8).map(" ".join))
def test_redaction_is_idempotent(text: str) -> None:
    once = redact_text(text)
    assert redact_text(once) == once


def test_structured_arguments_are_redacted_too() -> None:
    value = {"command": "mysql -uroot -pS3cret shop", "argv": ["sh", "-c", "PGPASSWORD=S3cret psql"]}
    out = redact_value(value)
    assert "S3cret" not in repr(out)
    assert out["command"] == "mysql -uroot -p[REDACTED:cli_password] shop"
    assert DEFAULT_REDACTOR.may_redact("curl -u a:b x") and DEFAULT_REDACTOR.may_redact("sshpass -p x ssh h")


@tool(permission="readonly")
def run(command: str) -> str:
    """Pretend to run a command.

    Args:
        command: the command line.
    """
    return f"ran: {command}"


@pytest.mark.anyio
async def test_the_audit_log_and_the_output_never_show_a_command_line_password(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    rt = Runtime([run], audit=db)
    outcome = await rt.call(ToolCall(name="run", arguments={"command": "sshpass -p 'Hunter 2' ssh h; curl -u a:Pw9 x"},
                                     id="c1"), CallContext(user="ann"))
    await rt.aclose()
    assert outcome.ok
    shown = str(outcome.content)
    assert "Hunter 2" not in shown and "Pw9" not in shown and "sshpass -p" in shown
    with sqlite3.connect(db) as conn:
        rows = " ".join(str(r) for r in conn.execute("SELECT * FROM audit"))
    assert "Hunter 2" not in rows and "Pw9" not in rows and "curl -u a:" in rows


@pytest.mark.parametrize("unit", ["curl ", "curl -u ", "mysql a ", "mysql -p ", "docker x ", "docker login ",
                                  "docker login -p ", "a1", "aPassword1", "A_", "--a-", "machine x ", "ldapx ",
                                  "redis-cli ", "authorization: ", "Authorization: Basic ", "sshpass -f x ",
                                  "https://a:b@", "--password ", "PGPASSWORD", "login x password "])
def test_adversarial_repetitions_are_redacted_in_linear_time(unit: str) -> None:
    """Each command's search stops at the next one: 200,000 characters of repeats finish (a quadratic search, as
    the first version had, takes minutes here: no clock is asserted, the run just has to end)."""
    text = unit * (200_000 // len(unit))
    out = redact_text(text)
    assert redact_text(out) == out


ARGV_LEAKS = [
    (["sshpass", "-p", "Hunter 2", "ssh", "-p", "2222", "host"], "Hunter 2", ["ssh", "-p", "2222", "host"]),
    (["curl", "-sS", "-u", "bob:Pw9x", "https://x.test"], "Pw9x", ["-u", "https://x.test"]),
    (["/usr/bin/mysql", "-uroot", "-pS3cret", "shop"], "S3cret", ["-uroot", "shop"]),
    (["gh", "api", "--token", "XYZ987", "/user"], "XYZ987", ["--token", "/user"]),
    (["tool", "--password=abc123"], "abc123", []),
    (["docker", "login", "-u", "bob", "-p", "hunter2", "reg.test"], "hunter2", ["-u", "bob", "reg.test"]),
    (["redis-cli", "-a", "r3dis", "PING"], "r3dis", ["PING"]),
    (["env", "PGPASSWORD=hunter2", "psql"], "hunter2", ["psql"]),
    (["sshpass", "-p", "PW1", "tool", "--token", "TOK2"], "TOK2", ["tool"]),
]


@pytest.mark.parametrize(("argv", "secret", "kept"), ARGV_LEAKS, ids=[" ".join(a) for a, _, _ in ARGV_LEAKS])
def test_argv_lists_are_read_as_command_lines(argv: list[str], secret: str, kept: list[str]) -> None:
    out = redact_value(argv)
    assert secret not in MARKER.sub("", repr(out)) and len(out) == len(argv)
    for part in kept:
        assert part in out
    assert redact_value(out) == out
    assert "PW1" not in repr(redact_value(["sshpass", "-p", "PW1", "tool", "--token", "TOK2"]))


@pytest.mark.parametrize("argv", [["ls", "-p", "x"], ["grep", "-p", "a"], ["mysql", "-p", "shop"],
                                  ["curl", "-u", "alice", "x"], ["x", "--password-file", "/p"],
                                  ["sshpass", "-f", "pw.txt", "ssh", "-p", "2222", "h"], ["a", "b"],
                                  ["docker", "run", "-u", "1000:1000", "-p", "8080:80", "img"]])
def test_ordinary_argv_lists_are_left_alone(argv: list[str]) -> None:
    assert redact_value(argv) is argv


def _argv(text: str) -> list[str]:
    import shlex

    return shlex.split(text)


@SETTINGS
@given(st.one_of(flag_leaks(), tool_leaks()).filter(lambda c: "\n" not in c[0] and "\r" not in c[0]
                                                      and c[0].count("'") % 2 == 0 and c[0].count('"') % 2 == 0))
def test_argv_lists_of_every_family_lose_their_secret(case: tuple[str, str]) -> None:
    text, secret = case
    try:
        argv = _argv(text)
    except ValueError:
        return
    bare = secret.strip("'\"")
    if secret.startswith("Q9") and any(bare in a for a in argv):
        out = redact_value(argv)
        assert not any(s in MARKER.sub("", repr(out)) for s in ("Q9", "9Q")), (argv, out)
        assert redact_value(out) == out
