"""Protected names inside the root: paths a tool may touch only after an approval ("ask").

A rule is a path glob (see :class:`~toolrig.guards._patterns.PathPattern`, matched on the *resolved*
path, case-insensitively, dotfiles included) and says whether it guards writes, reads or both.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from toolrig.guards._patterns import PathPattern

__all__ = ["DEFAULT_PROTECTED", "ProtectedRule", "find_protection"]


@dataclass(frozen=True)
class ProtectedRule:
    """``pattern`` (e.g. ``"**/.git/**"``) protected for ``write`` (create, change, delete, rename)
    and/or ``read``; ``why`` is shown in the approval prompt."""

    pattern: str
    why: str
    write: bool = True
    read: bool = False
    _compiled: PathPattern = field(init=False, repr=False, compare=False)
    _needle: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compiled", PathPattern(self.pattern, dotfiles=True, casefold=True))
        prefixes = [re.split(r"[*?\[]", part, maxsplit=1)[0].lower() for part in self.pattern.split("/")
                    if part not in ("", ".", "**")]
        object.__setattr__(self, "_needle", max(prefixes, key=len, default=""))

    def matches(self, components: Sequence[str]) -> bool:
        """Does the rule cover this resolved path?"""
        return self._matches(components, [c.lower() for c in components])

    def _matches(self, components: Sequence[str], lowered: Sequence[str]) -> bool:
        # quick filter: some component must start with the pattern's longest literal prefix
        if self._needle and not any(c.startswith(self._needle) for c in lowered):
            return False
        return self._compiled.matches(components)


def _rules(why: str, patterns: Iterable[str], *, read: bool = False) -> list[ProtectedRule]:
    return [ProtectedRule(p, why, write=True, read=read) for p in patterns]


_RC = (".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv", ".zprofile",
       ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".kshrc", ".inputrc", ".envrc")

DEFAULT_PROTECTED: tuple[ProtectedRule, ...] = (
    *_rules("git metadata: hooks and config run code", ["**/.git", "**/.git/**", "**/.gitmodules"]),
    *_rules("agent and editor configuration can start programs",
            ["**/.mcp.json", "**/.claude/**", "**/.cursor/**", "**/.vscode/**", "**/.idea/**", "**/.gemini/**",
             "**/.codex/**", "**/.windsurf/**", "**/.zed/**", "**/.continue/**", "**/.amazonq/**", "**/.kiro/**",
             "**/.roo/**", "**/.opencode/**", "**/opencode.json", "**/.aider.conf.yml"]),
    *_rules("version control or package manager configuration runs code at the next command",
            ["**/.hg/hgrc", "**/.yarnrc.yml", "**/.yarnrc", "**/.pnpmfile.cjs", "**/.pdbrc"]),
    *_rules("shell start-up file runs code", [f"**/{name}" for name in _RC] + ["**/.config/fish/**"]),
    *_rules("CI workflow runs code", ["**/.github/workflows/**", "**/.gitlab-ci.yml"]),
    *_rules("git hook manager configuration runs code at the next commit",
            ["**/.pre-commit-config.yaml", "**/.husky/**", "**/lefthook.yml", "**/.lefthook.yml",
             "**/lefthook-local.yml"]),
    *_rules("dev container configuration runs commands when opened", ["**/.devcontainer/**"]),
    *_rules("tool configuration with credentials or code hooks", ["**/.gitconfig", "**/.git-credentials",
                                                                   "**/.npmrc", "**/.pypirc", "**/.netrc",
                                                                   "**/.pgpass"], read=True),
    *_rules("secrets", ["**/.env", "**/.env.*", "**/.ssh", "**/.ssh/**", "**/.gnupg/**", "**/.aws/**",
                        "**/.kube/**", "**/.docker/config.json"], read=True),
)
"""The default protected names: writes always ask; reads of secret stores ask too."""


def find_protection(rules: Iterable[ProtectedRule], components: Sequence[str], *, write: bool) -> ProtectedRule | None:
    """The first rule protecting this resolved path for the operation, or None."""
    lowered = [c.lower() for c in components]
    for rule in rules:
        if (rule.write if write else rule.read) and rule._matches(components, lowered):
            return rule
    return None
