"""Redaction rules for credentials written on command lines and in config snippets (used by :mod:`toolrig.redact`).

Each entry is ``(name, pattern, hints)``: a regex whose ``secret`` group is the only part replaced (the command,
the flag and the user name stay readable), and literals one of which every match contains (folded: the patterns
are case-insensitive where flags and names are). Covered:

* secret-named flags, ``--password=X``, ``--password X``, ``-password X``, ``--token X``, ``--api-key X``,
  ``--client-secret X``, ``-storepass X``, ... (not ``--password-file PATH``, ``--password-stdin``, ``--no-password``,
  nor a value that is another flag);
* ``user:password`` values: ``curl -u/--user/-U/--proxy-user``, ``--auth``; a value without a colon is a user only;
* short flags of tools that take a password there: ``mysql``-family ``-pPASS`` (glued: ``-p PASS`` asks for the
  password and names a database), ``sshpass -p``, ``docker``/``podman``/... ``login -p``, ``redis-cli -a``,
  ``ldap*`` ``-w``, ``openssl -pass pass:X``;
* environment assignments whose name ends in a secret word: ``PGPASSWORD=... psql``, ``MYSQL_PWD=``, ``SSHPASS=``,
  ``export GITHUB_TOKEN=...`` (not ``PWD=``, not a ``$VAR`` reference);
* ``Authorization:`` / ``Proxy-Authorization:`` headers (``Basic``, ``Bearer``, ``Digest`` ..., whatever the
  length), ``.netrc`` entries (``machine H login U password P``), and camelCase keys (``dbPassword: X``,
  ``keyStorePassword=X``, ``clientSecret``).

A value is a quoted string (the quotes are replaced with it) or a run without spaces and shell separators. An
argv list is read the same way, flag by flag (:func:`argv_redacted`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["CMDLINE_RULES", "argv_redacted"]

_VALUE = r"""(?!"?\$[{(A-Za-z_])(?P<secret>(?!\[REDACTED)(?:"[^"\n]*"|'[^'\n]*'|[^\s"'`;&|<>()]+))"""
"""The secret: a quoted string (quotes included), or a run of characters that are not space, quotes or shell
separators. Never a marker already put there (redaction is idempotent), nor a shell variable (``$DB_PASS``,
``"${TOKEN}"``: the secret is elsewhere)."""

_COLON_VALUE = r"""(?:(?P<q>["'])|)[^\s"':]*:(?P<secret>(?!\[REDACTED)(?(q)[^"'\n]+|[^\s"'`;&|<>()]+))"""
"""A ``user:password`` value: the part after the first colon (up to the closing quote when quoted)."""

def _first(command: str, flag: str, stop: str | None = None) -> str:
    """``command``, then the first ``flag`` after it on the same command line (no line break, ``;``, ``|``, ``&``
    between): the password flag is the first one (``docker login -p PW`` ... ``-p`` later names something else),
    and redaction stays idempotent (a second pass stops at the same flag, now holding a marker). The run stops at
    the next ``command`` (or ``stop``) too, so each character is looked at for one command at most (linear time)."""
    return rf"(?:{command})(?:(?!\s(?:{flag})|(?:{stop or command}))[^\n;|&])*\s(?:{flag})"


_FLAG_WORDS = (r"passw(?:or)?d|pass(?:phrase|in|out)?|pwd|token|secret|api[_-]?key|apikey|access[_-]?key"
               r"|secret[_-]?key|storepass|keypass|srcstorepass|deststorepass")
"""Flag names (after an optional ``db-`` / ``http_`` ... prefix) whose value is a secret. Not ``private-key`` or
``credentials``: their values are usually paths."""

_REGISTRY_CLIS = r"\b(?:docker|podman|nerdctl|buildah|skopeo|helm|oras|crane)\b"

CMDLINE_RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    # --password X, --password=X, -password X, --db-password X, --token X, -storepass X ...
    ("cli_secret", r"(?i)-(?<![\w-]-)-?(?!no-|max[_-]|min[_-]|num[_-])(?:[a-z0-9]+[_-])*(?:" + _FLAG_WORDS
     + r")(?:=|[ \t]+)(?!-|(?:file|env|fd):)" + _VALUE,
     ("passw", "-pass", "_pass", "storepass", "keypass", "pwd", "token", "secret", "key")),
    # curl -u user:pass, --user user:pass, --user=user:pass, -uuser:pass, -U (proxy), httpie/others --auth u:p
    ("cli_user_password", r"(?i)(?=[c-])(?:" + _first(r"\bcurl\b", r"-u|--(?:proxy-)?user(?=[=\s])")
     + r"|(?<![\w-])--auth)(?:=|[ \t]*)" + _COLON_VALUE, ("curl", "--auth")),
    # mysql -pPASS (glued only), mysqldump, mysqladmin, mariadb, mariadb-dump ...
    ("cli_password", "(?=[m])" + _first(r"\b(?:mysql\w*|mariadb[\w-]*)\b", r"-p(?=\S)") + _VALUE,
     ("mysql", "mariadb")),
    # sshpass -p PASS / -pPASS, among sshpass's own options (after them, -p is the command's: ssh -p PORT)
    ("cli_password", r"(?=s)\bsshpass(?:[ \t]+-[fdP][ \t]*\S+|[ \t]+-[evhV](?!\S))*[ \t]+-p[ \t]*" + _VALUE,
     ("sshpass",)),
    # docker / podman / nerdctl / helm ... login -p PASS
    ("cli_password", "(?=[dpnbshoc])" + _first(
        _REGISTRY_CLIS + r"(?:(?!\blogin\b|" + _REGISTRY_CLIS + r")[^\n;|&])*\blogin\b", "-p",
        r"\blogin\b|" + _REGISTRY_CLIS) + r"[ \t]*" + _VALUE, ("login",)),
    # redis-cli -a PASS, ldapsearch -w PASS
    ("cli_password", "(?=r)" + _first(r"\bredis-cli\b", "-a") + r"[ \t]*" + _VALUE, ("redis-cli",)),
    ("cli_password", "(?=l)" + _first(r"\bldap\w+\b", "-w") + r"[ \t]*" + _VALUE, ("ldap",)),
    # openssl ... -pass pass:X / -passin pass:X
    ("cli_password", r"-(?<![\w-]-)pass(?:in|out)?[ \t]+pass:" + _VALUE, ("pass:",)),
    # PGPASSWORD=... psql, MYSQL_PWD=..., SSHPASS=..., export API_TOKEN=...
    ("env_secret", r"(?=[A-Z])(?<![\w$])(?:(?:[A-Z][A-Z0-9]*_)+(?:PASSWORD|PASSWD|PASS|PWD|TOKEN|SECRET|API_?KEY"
     r"|ACCESS_KEY|SECRET_KEY|PRIVATE_KEY|AUTH|CREDENTIALS?)|[A-Z]*PASSW(?:OR)?D|SSHPASS|TOKEN|SECRET|API_?KEY)="
     + _VALUE, ("passw", "_pass", "sshpass", "pwd", "token", "secret", "key", "_auth", "credential")),
    # Authorization: Basic dTpw / Proxy-Authorization: Bearer x / Authorization: rawtoken (the whole value, even
    # when an earlier rule took only a part of it: "Bearer [REDACTED:bearer_token],rest")
    ("authorization", r"(?i)(?=[pa])\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
     r"(?>(?:(?:basic|bearer|token|negotiate|ntlm|apikey|aws4-hmac-sha256)[ \t]+)?)"
     r"(?P<secret>(?!\[REDACTED:\w+\](?![^\s\"'])|digest\b)[^\s\"']+)",
     ("authorization",)),
    ("authorization", r"(?i)(?=[pa])\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?digest[ \t]+"
     r"(?P<secret>(?!\[REDACTED)[^\r\n]+)", ("authorization",)),
    # .netrc: machine H [login U] [account A] [port P] password P; default ... password P
    ("netrc_password", r"(?i)(?=[md])(?:\bmachine\s+\S+|(?<![^\s])default)(?:\s+(?:account|port)\s+\S+)*\s+login\s+\S+"
     r"(?:\s+(?:account|port)\s+\S+)*\s+password\s+(?P<secret>(?!\[REDACTED)\S+)", ("password",)),
    ("netrc_password", r"(?i)(?=[md])(?:\bmachine\s+\S+|(?<![^\s])default)(?:\s+(?:account|port)\s+\S+)*\s+password\s+"
     r"(?P<secret>(?!\[REDACTED)\S+)(?=(?:\s+(?:account|port)\s+\S+)*\s+login\s)", ("password",)),
    # camelCase keys: dbPassword: X, keyStorePassword=X, clientSecret = "X", authToken: X (not nextToken/pageToken)
    ("credential", r"(?=[a-z])(?<![A-Za-z0-9])(?!(?:next|page|continuation|sync|cancel)Token)[a-z][a-zA-Z0-9]*?[a-z0-9]"
     r"(?:Password|Passwd|Pwd|Passphrase|Secret|Token|ApiKey|AccessKey|SecretKey|PrivateKey)[\"']?[ \t]*[:=][ \t]*"
     r"(?!(?:true|false|null|none)\b)" + _VALUE, ("passw", "passphrase", "pwd", "secret", "token", "key")),
)
"""The command-line and config-snippet rules, in the order :data:`toolrig.redact.DEFAULT_RULES` applies them."""


def argv_redacted(items: list[Any], redact: Callable[[str], str]) -> list[Any] | None:
    """An argv list (``["sshpass", "-p", "PW", "ssh", "h"]``) with the secrets the rules find when it is read as a
    command line (``sshpass -p PW``, ``curl -u u:PW``, ``--token X``, ``-pPW``), or None when there is none.

    Each flag is read after the elements before it (so ``ssh -p 2222`` after ``sshpass -p PW`` stays a port),
    alone (a glued value) and with the next element (quoted when it has spaces); only the element whose own text
    changed is replaced. A list of more than :data:`_MAX_ARGV` elements, or of anything but strings, is data, not
    an argv."""
    if len(items) > _MAX_ARGV or not all(isinstance(x, str) for x in items):
        return None
    if not any(x[:1] == "-" or "=" in x for x in items):
        return None  # no flag, no assignment: nothing is read otherwise than alone
    out = list(items)
    shown = [_shown(x) for x in items]
    changed = False
    for i, flag in enumerate(items):
        if _ASSIGNMENT.match(flag):  # NAME=VALUE (env PGPASSWORD=...): the value runs to the element's end
            glued = _glued(flag, " ".join(shown[:i]) + " ", redact)
            if glued is not None:
                out[i], changed = glued, True
                shown[i] = _shown(out[i])
            continue
        if flag[:1] != "-" or not i:
            continue
        head = " ".join(shown[:i]) + " "
        glued = _glued(flag, head, redact)
        if glued is not None:
            out[i], changed = glued, True
        if i + 1 == len(items) or not items[i + 1] or items[i + 1][:1] == "-" or not _PLAIN.fullmatch(flag):
            shown[i] = _shown(out[i])
            continue
        line = f"{head}{flag} {shown[i + 1]}"
        redacted = redact(line)
        if redacted != line and redacted.startswith(head) and " " in redacted[len(head):]:
            flag_part, new = redacted[len(head):].split(" ", 1)  # one redaction of both: "-password PW"
            quoted = shown[i + 1] != items[i + 1] and new[:1] in "'\"" and new[-1:] == new[:1]
            if flag_part != flag:
                out[i] = flag_part
            if new != shown[i + 1]:
                out[i + 1] = new[1:-1] if quoted else new
            changed = True
            shown[i + 1] = _shown(out[i + 1])  # later flags are read after the redacted text
        shown[i] = _shown(out[i])
    return out if changed else None


def _glued(flag: str, head: str, redact: Callable[[str], str]) -> str | None:
    """``flag`` with the secret glued to it redacted (``-pPW``, ``--password=PW``, ``-u'u:P W'``), or None.

    A flag with spaces or shell separators in it is shown quoted after its name (``-password='P;W'``, or after
    its letter, ``-p'P;W'``): each way is tried until one redacts it."""
    splits = [("", flag)]
    if not _PLAIN.fullmatch(flag):
        splits = [(m.group(0), flag[m.end():]) for m in (p.match(flag) for p in _FLAG_HEADS) if m is not None]
    for prefix, rest in splits:
        line = head + prefix + _shown(rest)
        redacted = redact(line)
        if redacted == line or not redacted.startswith(head + prefix):
            continue
        tail = redacted[len(head + prefix):]
        if _shown(rest) != rest and len(tail) > 1 and tail[0] in "'\"" and tail[-1] == tail[0]:
            tail = tail[1:-1]
        return prefix + tail
    return None


_FLAG_HEADS = (re.compile(r"--?[A-Za-z][\w-]*="), re.compile(r"-[A-Za-z]"), re.compile(r"[A-Za-z_][A-Za-z0-9_]*="))
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _shown(arg: str) -> str:
    """``arg`` as a command line shows it: quoted when it has spaces or shell separators."""
    if _PLAIN.fullmatch(arg) or arg.startswith("[REDACTED:"):
        return arg
    return f"'{arg}'" if "'" not in arg else f'"{arg}"' if '"' not in arg else arg


_PLAIN = re.compile(r"""[^\s"'`;&|<>()]*""")


_MAX_ARGV = 64
