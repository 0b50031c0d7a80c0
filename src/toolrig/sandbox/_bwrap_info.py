"""What the installed bubblewrap is and which of the options we rely on it has."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

__all__ = ["BwrapInfo", "probe_bwrap"]

_OPTIONS = ("--disable-userns", "--size", "--json-status-fd", "--perms", "--ro-bind-data", "--cap-drop",
            "--die-with-parent", "--new-session", "--remount-ro", "--args", "--dir", "--ro-bind-fd", "--bind-fd")
_REQUIRED = ("--json-status-fd", "--ro-bind-data", "--cap-drop", "--die-with-parent", "--new-session",
             "--remount-ro")


@dataclass(frozen=True, slots=True)
class BwrapInfo:
    """A bubblewrap binary: path, version, and which options its ``--help`` lists."""

    path: str
    version: str
    options: frozenset[str]

    def has(self, option: str) -> bool:
        """Whether this bubblewrap knows ``option``."""
        return option in self.options

    def missing(self) -> list[str]:
        """Options we cannot do without that this bubblewrap lacks."""
        return [o for o in _REQUIRED if o not in self.options]


def probe_bwrap(path: str | None = None) -> BwrapInfo | str:
    """Find and describe bubblewrap, or say (as a string) why there is none usable."""
    binary = path or shutil.which("bwrap") or shutil.which("bwrap", path="/usr/bin:/bin:/usr/local/bin")
    if not binary:
        return "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    try:
        version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10,
                                 env={"PATH": "/usr/bin:/bin"}, check=False).stdout.strip()
        helptext = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=10,
                                  env={"PATH": "/usr/bin:/bin"}, check=False).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{binary} cannot be run: {exc}"
    options = frozenset(o for o in _OPTIONS if re.search(rf"(^|\s){re.escape(o)}(\s|$)", helptext, re.M))
    info = BwrapInfo(binary, version or "unknown version", options)
    if info.missing():
        return f"{binary} ({info.version}) lacks {', '.join(info.missing())}: install bubblewrap 0.5 or newer"
    return info
