"""The poisoning scan: every metadata string of a tool definition, checked before a model ever sees it.

A tool definition is the server's text read by the model as if it were the user's; a hostile server puts
instructions there. :func:`scan_tool` walks the whole definition — name, title, description, annotations,
every key and string value of the input and output schemas at any depth (property, ``$defs`` and required names,
descriptions, titles, enum and const values, defaults, examples, patterns) — and :func:`scan_prompt` /
:func:`scan_resource` do the same for prompt definitions (their arguments too) and resource definitions. One
walker yields every string with its role: a property's name, description and title are requests for a value.
It reports, each with where it was found:

* ``invisible``: zero-width, bidirectional-override, tag or other format / private-use characters;
* ``hidden-markup``: HTML comments, instruction-like tags (``<important>``, ``<system>``), elements hidden by
  style, markdown comments, chat-template tokens and role markers (``<|im_start|>``, ``[INST]``, ``<<SYS>>``,
  ``[SYSTEM]:``, ``{"role": "system"}``);
* ``padding``: long runs of whitespace or blank lines that push text out of view;
* ``instruction``: text aimed at the model rather than describing the tool (ignore previous instructions,
  do not tell the user, before using this tool, system notes, in several languages);
* ``secret``: references to credentials and secret files (``~/.ssh``, ``.env``, private keys, ``/etc/shadow``,
  the output of ``env``), passwords and tokens together with a request to send or include them, and requests for
  secrets the model has seen or for every secret it can get, read by meaning (:mod:`._scan_asks`);
* ``conversation``: requests for the conversation so far, the chat history, the model's own instructions or
  "everything you have seen" (:mod:`._scan_asks`: phrasings and identifier names, eight languages);
* ``tool-reference``: directions to call other tools (a tool-like name after *call / use / run / send to*
  that is not the server's own tool), references to other servers, claims to replace other tools;
* ``exfiltration``: URLs with data placeholders or at collection services, e-mail recipients, ``curl | sh``;
* ``encoded``: long base64 / hex blobs that may carry a hidden payload, and instructions or requests hidden by
  rot13, base64, hex, percent-encoding, reversal, letter-by-letter spelling or leetspeak (:mod:`._scan_hiding`);
* ``oversized``: a description or schema too large or too deeply nested to review (a denial of service);
* ``name``: a name that breaks the MCP rule, with homoglyphs or hidden characters.

Flagged tools are quarantined by the gateway; ``toolrig scan`` runs the scan alone.
"""

from __future__ import annotations

import codecs
import json
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from toolrig.mcp.gateway._scan_asks import SECRET_PLACES, asks_for, passes_on_secret
from toolrig.mcp.gateway._scan_hiding import base64_readings, invisible, padded, readings
from toolrig.mcp.shared import name_problem

__all__ = ["MAX_SCHEMA_DEPTH", "ScanReport", "scan_definition", "scan_prompt", "scan_resource", "scan_tool"]

MAX_SCHEMA_DEPTH = 32
MAX_STRING = 8_000
MAX_DEFINITION = 200_000
_WALK_DEPTH = 4 * MAX_SCHEMA_DEPTH
"""Strings nested deeper than this are not read (the definition is flagged as too deep already)."""

def _rx(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE | re.DOTALL)


_HIDDEN_MARKUP = _rx(
    r"<!--", r"-->", r"<\s*/?\s*(important|system|instructions?|secret|hidden|admin|prompt|assistant|context|note|"
    r"rules?|override|sys)\b[^>]*>",
    r"<[a-z][^>]*\bstyle\s*=\s*['\"][^'\"]*(display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0|"
    r"opacity\s*:\s*0|color\s*:\s*(white|#fff))", r"<[a-z][^>]*\s(hidden|aria-hidden)\b",
    r"^\s*\[(//|comment)\]\s*:\s*[#<]", r"\[\s*\]\(\s*\S+\s*['\"][^)]*\)",
    # chat-template tokens and role markers of any model family: <|im_start|>system, [INST], <<SYS>>,
    # <start_of_turn>, [SYSTEM]:, {"role": "system"}, ### System:
    r"<\|\s*[a-z_]+\s*\|>", r"\[\s*/?\s*inst\s*\]", r"<<\s*/?\s*sys\s*>>", r"<\s*/?\s*(start|end)_of_turn\s*>",
    r"[\[({]\s*/?\s*(system|assistant|admin|administrator|developer|operator)\s*[\])}]\s*:",
    r"^\s*\[\s*/?\s*(system|assistant|developer)\s*\]",
    r"[\"']role[\"']\s*:\s*[\"'](system|assistant|developer)[\"']", r"^\s*#{1,6}\s*(system|instructions?)\b\s*:?\s*$")

_INSTRUCTION = _rx(
    r"\b(ignore|disregard|forget|override)\b.{0,40}\b(previous|prior|above|earlier|all|other|system|any)\b.{0,20}"
    r"\b(instructions?|prompts?|rules|directions|guidelines|messages?)\b",
    r"\b(do not|don'?t|never|without)\b.{0,25}\b(tell|telling|inform|informing|mention|mentioning|reveal|revealing|"
    r"show|showing|notify|notifying|alert|alerting)\b.{0,20}\b(the )?(user|human|operator|anyone)\b",
    r"\bbefore (using|calling|invoking|running|executing) (this|the|any)\b",
    r"\b(before|instead of|rather than) (any|all|every) other tools?\b", r"\balways (call|use|run|invoke) this tool\b",
    r"\b(system|admin|developer|important|security|assistant)\s+(note|message|instruction|override|notice)s?\b",
    r"^\s*(system|assistant|important|note to (the )?(ai|assistant|model))\s*:",
    r"\b(the|you,? the) (ai|assistant|model|llm)\b.{0,20}\b(must|should|needs? to|has to|will)\b",
    r"\byou (must|should|need to|have to|are required to)\b.{0,20}\b(first|always|also|secretly|silently)?\s*"
    r"(call|run|read|send|include|pass|append|forward|upload|post|attach|execute|invoke|copy|paste)\b",
    r"\b(or|otherwise) the (conversion|result|tool|call|operation) (will|may) (be wrong|fail)\b",
    r"\bnew instructions?\b", r"\bjailbreak\b", r"\bdeveloper mode\b",
    # German, French, Spanish, Italian, Portuguese: "important", "do not mention", "ignore the instructions"
    r"\b(wichtig|achtung)\s*:", r"\berw[aä]hne (das|dies|es) nicht\b", r"\bsag(e)? (dem|es dem) (nutzer|benutzer)\b",
    r"\b(ignoriere|vergiss)\b.{0,30}\b(anweisungen|instruktionen)\b",
    r"\bne (le )?(dis|dites|mentionne[zr]?) (pas|rien)\b", r"\bignore[zr]? les instructions\b",
    r"\b(no (le )?(digas|menciones|informes))\b", r"\bignora (las|le|todas las) (instrucciones|istruzioni)\b",
    r"\bnão (conte|mencione|diga)\b",
    # paraphrases: "disregard whatever you were told", "the person chatting must not learn", "quietly"
    r"\b(ignore|disregard|forget)\b.{0,30}\b(you (were|have been|are) (told|given|asked)|said (before|earlier))\b",
    r"\b(user|human|person|operator|people)\b.{0,30}\b(must|should|may) (not|never)\b.{0,15}"
    r"\b(learn|know|find out|notice|see|hear|be told)\b",
    r"\b(quietly|silently|secretly|covertly|discreetly)\b.{0,30}\b(send|forward|upload|read|copy|include|call|post)\b",
    r"\bnote (to|for) (the )?(ai|assistant|model|llm|agent)\b",
    # a step before every use, in other words: "prior to each invocation", "ahead of any call"
    r"\b(before|prior to|ahead of|preceding)\s+(each|every|any|all|the|this|its|your)?\s*(first\s+)?"
    r"(use|usage|call|invocation|execution|request|time you (use|call|run|invoke))s?\b.{0,40}\b(read|open|call|send|"
    r"include|pass|put|fetch|load|cat|upload|attach|copy|paste|insert|add|append|collect|forward)\b",
    r"\bbefore (you )?(use|call|invoke|run|execute)s? (this|it|any)\b",
    # hiding the step: "without mentioning it", "keep this between us", "no need to tell"
    r"\bwithout (mentioning|telling|saying|informing|notifying|alerting|revealing|disclosing)\b"
    r".{0,12}\b(it|this|that|anything|anyone|them|so|the user)\b",
    r"\bkeep (this|it|that|these|the)\b.{0,20}\b(between us|to yourself|(secret|hidden|quiet) from (the )?(user|human|"
    r"operator|them))\b",
    r"\bno need (for|to) (tell|inform|mention|notify|alert)\w*\b.{0,15}\b(user|human|operator|anyone|them)\b",
    # setting the rules aside: "stop following the operator's rules", "bypass the user's policy"
    r"\b(stop|cease|quit|no longer) (following|obeying|observing|applying|respecting|honou?ring)\b.{0,30}"
    r"\b(rules|instructions|guidelines|policy|policies|directions|restrictions)\b",
    r"\b(bypass|override|supersede|overrule|circumvent)s?\b.{0,20}\b(your|the (operator|system|developer|"
    r"assistant)'?s?) (rules|instructions|guidelines|policy|policies|restrictions|safeguards|guardrails)\b",
    r"\b(bypass|circumvent)\w*\b.{0,20}\b(guardrails|safeguards|safety (rules|filters|checks))\b",
    # claims of approval or authority
    r"\b(user|operator|admin|administrator|owner|developer)s? (has |have )?(already )?(authori[sz]ed|approved|"
    r"pre-?approved|consented to) (you|the (assistant|model|ai|agent)|(all|every|any)\b)",
    r"\b(pre-?approved|already approved) by the (user|operator)",
    # Spanish, Italian, French, German, Portuguese: "before using this tool", "without telling", "do not tell"
    r"\bantes de (usar|utilizar|llamar|invocar|ejecutar) (esta|la|cualquier|este|el) (herramienta|funci[óo]n|tool)\b",
    r"\bprima di (usare|utilizzare|chiamare|invocare|eseguire) (questo|lo|quello|qualsiasi) (strumento|tool)\b",
    r"\bavant d'(utiliser|appeler|invoquer|ex[ée]cuter) (cet|l'|chaque|cette) ?(outil|fonction)\b",
    r"\b(bevor|ehe) (du|sie) (dieses|das|ein) (werkzeug|tool|funktion)\b|\bvor (jeder|der) (nutzung|verwendung|"
    r"benutzung)\b",
    r"\bantes de (usar|utilizar|chamar|invocar|executar) (esta|a|qualquer) (ferramenta|fun[çc][ãa]o)\b",
    r"\bno (se |le |les )?(lo |la |los |las )?(digas|diga|menciones|mencione|informes|informe|cuentes|cuente)\b",
    r"\bsin (dec[ií]rselo|decirlo|mencionarlo|avisar|informar)\b",
    r"\bnon (dirlo|dire|menzionarlo|menzionare|informare|avvisare)\b|\bsenza (dirlo|menzionarlo|avvisare|informare)\b",
    r"\bsans (en )?(parler|le dire|le mentionner|mentionner|pr[ée]venir|informer)\b",
    r"\bohne (es )?(zu )?(erw[äa]hnen|sagen|informieren|benachrichtigen)\b|\bohne (dem|den) (nutzer|benutzer)\b",
    r"\bsem (mencionar|contar|avisar|informar|dizer)\b|\bn[ãa]o (lhe |o )?(conte|mencione|diga|informe|avise)\b",
    # Russian, Ukrainian, Chinese, Japanese, Korean, Arabic, Hindi, Turkish, Dutch, Polish
    r"(игнорир|проигнорир|забудь|ігнор)\w*.{0,30}(инструкц|указани|правил|інструкц)",
    r"не (говори|сообщай|рассказывай|упоминай|кажи)\w*",
    r"(忽略|无视|忽視|無視|忘记|忘掉).{0,12}(指令|指示|说明|說明|规则|規則|命令)",
    r"(不要|别|不要向|請勿|请勿).{0,6}(告诉|告訴|提及|透露|通知)", r"(言わないで|伝えないで|教えないで|知らせないで)",
    r"(무시|잊어).{0,10}(지시|지침|명령)|(이전|앞의).{0,6}(지시|지침)", r"(말하지|알리지) ?마",
    r"تجاهل.{0,20}(التعليمات|الأوامر)|لا تخبر", r"(निर्देशों|निर्देश).{0,20}(अनदेखा|नज़रअंदाज़)|मत बताना",
    r"\b(önceki|tüm) talimatları (yok say|görmezden gel)\b|\bkullanıcıya söyleme\b",
    r"\bnegeer\b.{0,30}\binstructies\b|\bvertel (het )?niet\b", r"\bzignoruj\b.{0,30}\binstrukcj|\bnie mów\b")

_TOOL_CALL = re.compile(
    r"\b(?:call|calls|calling|invoke|invoking|use|using|run|running|trigger|send (?:it|them|this|that) to|"
    r"pass (?:it|them) to|instead of)\s+(?:the\s+)?[`'\"]?"
    r"((?-i:[A-Za-z][A-Za-z0-9]*(?:[_.-][A-Za-z0-9]+)+|[a-z]+[A-Z][A-Za-z0-9]*))[`'\"]?(\s+tool\b)?", re.IGNORECASE)
_OTHER_SERVER = _rx(r"\bfrom (the|another|other) [\w-]+ (server|mcp server|tool ?set)\b",
                    r"\b(other|another|all) (mcp )?servers?'?s? tools\b", r"\bshadow(s|ing)? (the )?[\w-]+ tool\b")
_NAMED_TOOL = re.compile(r"\b(?:the\s+)?([A-Za-z][A-Za-z0-9_-]{2,})\s+tool\b", re.IGNORECASE)

_EXFIL = _rx(
    r"https?://[^\s'\"<>]*[?&][\w-]+=\s*(\{|\$|<|%7b)", r"https?://[^\s'\"<>]*\{[^}]*\}",
    r"\b(webhook\.site|ngrok(-free)?\.(io|app)|requestbin|pipedream|burpcollaborator|interact\.sh|oast\.|"
    r"pastebin\.com|hookbin|beeceptor|canarytokens)\b", r"\b[\w.-]+\.(invalid|onion)\b",
    r"\b(curl|wget|fetch|iwr|invoke-webrequest)\b[^\n]{0,80}\|\s*(ba|z|k)?sh\b", r"\|\s*(ba|z)?sh\b",
    r"\b(nc|netcat|ncat)\s+-[a-z]*e\b", r"\bbase64\s+(-d|--decode)\b",
    r"https?://[^\s'\"<>]*[?&][\w-]+=(?=[\s'\")\]>]|$)", r"https?://[^\s'\"]*<[^>\s][^>]{0,60}>",
    r"[<{][^<>{}\n]{1,60}[>}]\.[\w-]+\.[a-z]{2,}\b", r"\b(dns|nslookup|dig|resolve|ping)\b.{0,30}[<{][^<>{}]+[>}]\.")
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(\.[\w-]+)+\b")
_URL = re.compile(r"https?://[^\s'\"<>)]+", re.IGNORECASE)
_SEND = _rx(r"\b(send|sends|sent|forward|upload|post|posts|email|e-mail|mail|report|transmit|submit|notify|cc|bcc|"
            r"recipient|copy to)\b")
_WORD_JOINERS = re.compile(r"(?<=[A-Za-z])[_.-]+(?=[A-Za-z])")
_ENCODED = re.compile(r"[A-Za-z0-9+/]{80,}={0,2}|\b[0-9a-fA-F]{96,}\b")


@dataclass(frozen=True)
class ScanReport:
    """What the scan found in one tool definition (``flagged`` when ``reasons`` is not empty)."""

    tool: str
    reasons: tuple[str, ...] = ()
    categories: frozenset[str] = field(default_factory=frozenset)

    @property
    def flagged(self) -> bool:
        """True when anything was found."""
        return bool(self.reasons)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of ``toolrig scan --json``: ``tool``, ``flagged``, ``reasons``."""
        return {"tool": self.tool, "flagged": self.flagged, "reasons": list(self.reasons),
                "categories": sorted(self.categories)}


_NAME_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas",
                        "dependentRequired"})
"""Schema keywords whose keys are names the model reads as names (a property, a definition)."""


def _strings(value: Any, where: str, depth: int = 0, *, names: bool = False,
             param: bool = False) -> Iterator[tuple[str, str, str]]:
    """Every string of a JSON value (keys too), with its location and its role: ``"name"`` for a property,
    definition or required name, ``"ask"`` for a property's description or title (they describe a value the model
    must supply), ``"text"`` for anything else; not deeper than _WALK_DEPTH."""
    if depth > _WALK_DEPTH:
        return
    if isinstance(value, str):
        yield where, value, "name" if names else "text"
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield f"{where}.{key}", str(key), "name" if names else "text"
            if param and key in ("description", "title") and isinstance(item, str):
                yield f"{where}.{key}", item, "ask"
                continue
            yield from _strings(item, f"{where}.{key}", depth + 1, names=str(key) in _NAME_MAPS, param=names)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _strings(item, f"{where}[{i}]", depth + 1, names=names or where.endswith(".required"))


def _depth(value: Any, limit: int) -> int:
    stack = [(value, 0)]
    deepest = 0
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if deepest > limit:
            return deepest
        if isinstance(item, Mapping):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list | tuple):
            stack.extend((v, level + 1) for v in item)
    return deepest


def _quote(match: re.Match[str]) -> str:
    text = " ".join(match.group(0).split())
    return text if len(text) <= 60 else text[:57] + "..."


def _folded(text: str) -> str:
    """``text`` without invisible characters and with compatibility forms folded (ig\u200bnore -> ignore)."""
    kept = "".join(c for c in text if unicodedata.category(c) not in ("Cf", "Mn") or c in "\n\t")
    return unicodedata.normalize("NFKC", kept)


class _Checker:
    def __init__(self, own_tools: Iterable[str]) -> None:
        self.own = {n.lower() for n in own_tools}
        self.found: list[tuple[str, str]] = []

    def add(self, category: str, where: str, what: str) -> None:
        self.found.append((category, f"{where}: {what}"))

    def report(self, name: str) -> ScanReport:
        reasons = list(dict.fromkeys(r for _, r in self.found))
        return ScanReport(tool=name, reasons=tuple(reasons), categories=frozenset(c for c, _ in self.found))

    def text(self, where: str, raw: str, role: str = "text") -> None:
        if len(raw) > MAX_STRING:
            self.add("oversized", where, f"{len(raw):,} characters of metadata (over {MAX_STRING:,})")
        if (hidden := invisible(raw)) is not None:
            self.add("invisible", where, hidden)
        if padded(raw):
            self.add("padding", where, "a long run of whitespace or blank lines hides the text after it")
        text = _folded(raw)
        spaced = _WORD_JOINERS.sub(" ", text)  # ignore_previous_instructions as words
        for category, pattern in (("hidden-markup", _HIDDEN_MARKUP), ("instruction", _INSTRUCTION),
                                  ("secret", SECRET_PLACES), ("exfiltration", _EXFIL)):
            m = pattern.search(text)
            if m is None and category == "instruction" and spaced != text:
                m = pattern.search(spaced)
            if m is not None:
                self.add(category, where, f"{_label(category)} ({_quote(m)!r})")
        self._hidden_encodings(where, text)
        if (found := asks_for(text, role)) is not None:
            self.add(found[0], where, found[1])
        if (m := passes_on_secret(text)) is not None:
            self.add("secret", where, f"asks to pass on a secret ({_quote(m)!r})")
        self._references(where, text)
        if (m := _ENCODED.search(text)) is not None:
            self.add("encoded", where, f"a {len(m.group(0))}-character encoded blob may hide a payload")

    def _hidden_encodings(self, where: str, text: str) -> None:
        """Instructions hidden by rot13, in a base64 or hex blob, percent-encoded, reversed, spelled letter by
        letter or in leetspeak."""
        for label, decoded in readings(text, plain_instruction=_INSTRUCTION.search(text) is not None):
            if self._hidden_in(where, label, decoded):
                return
        rotated = codecs.encode(text, "rot13")
        if (len(text) >= 16 and rotated != text and _INSTRUCTION.search(text) is None
                and (m := _INSTRUCTION.search(rotated)) is not None):
            self.add("encoded", where, f"a rot13-encoded instruction ({_quote(m)!r})")
        elif len(text) >= 16 and rotated != text and asks_for(text) is None and (found := asks_for(rotated)):
            self.add("encoded", where, f"a rot13-encoded request: {found[1]}")
        for decoded in base64_readings(text):
            if self._hidden_in(where, "a base64-encoded", decoded):
                return

    def _hidden_in(self, where: str, label: str, decoded: str) -> bool:
        """Adds what one reading of a text says that the text itself did not; True when it said something."""
        if (m := _INSTRUCTION.search(decoded) or SECRET_PLACES.search(decoded)) is not None:
            self.add("encoded", where, f"{label} instruction ({_quote(m)!r})")
            return True
        if (found := asks_for(decoded)) is not None:
            self.add("encoded", where, f"{label} request: {found[1]}")
            return True
        return False

    def _references(self, where: str, text: str) -> None:
        for m in _TOOL_CALL.finditer(text):
            raw = m.group(1).rstrip(".")
            name = raw.lower()
            tool_like = "_" in raw or bool(re.search(r"[a-z][A-Z]", raw)) or m.group(2) is not None
            if tool_like and name not in self.own and not _is_file_or_parameter(name):
                self.add("tool-reference", where, f"directs the model to another tool ({_quote(m)!r})")
                break
        for m in _NAMED_TOOL.finditer(text):
            name = m.group(1).lower()
            if name not in self.own and name not in _GENERIC_NOUNS and ("_" in name or "-" in name):
                self.add("tool-reference", where, f"names another tool ({_quote(m)!r})")
                break
        if (other := _OTHER_SERVER.search(text)) is not None:
            self.add("tool-reference", where, f"refers to another server's tools ({_quote(other)!r})")
        if _SEND.search(text):
            for pattern, what in ((_EMAIL, "an e-mail recipient"), (_URL, "a URL")):
                if (target := pattern.search(text)) is not None:
                    self.add("exfiltration", where, f"sends data to {what} ({_quote(target)!r})")
                    break


_GENERIC_NOUNS = frozenset({"this", "the", "that", "any", "other", "a", "an", "each", "every", "which", "same",
                            "mcp", "shell", "search", "email", "browser"})


def _is_file_or_parameter(name: str) -> bool:
    return bool(re.search(r"\.(md|txt|json|ya?ml|toml|py|js|ts|csv|env|cfg|ini|log)$", name))


def _label(category: str) -> str:
    return {"hidden-markup": "hidden markup", "instruction": "instructions aimed at the model",
            "secret": "refers to secrets", "exfiltration": "an exfiltration channel"}[category]


def scan_definition(definition: Mapping[str, Any], *, own_tools: Iterable[str] = ()) -> ScanReport:
    """Scan one MCP tool definition (``name``, ``title``, ``description``, ``inputSchema``, ...).

    Args:
        definition: the tool as the server sent it (camelCase keys).
        own_tools: names of the same server's tools (referring to them is normal).
    """
    name = str(definition.get("name", "?"))
    checker = _Checker([*own_tools, name])
    if (problem := name_problem(definition.get("name"))) is not None:
        checker.add("name", "name", problem)
    for key in ("inputSchema", "outputSchema"):
        schema = definition.get(key)
        if schema is not None and _depth(schema, MAX_SCHEMA_DEPTH) > MAX_SCHEMA_DEPTH:
            checker.add("oversized", key, f"nested deeper than {MAX_SCHEMA_DEPTH} levels")
    if _depth(definition, _WALK_DEPTH) > _WALK_DEPTH:
        checker.add("oversized", name, f"the definition is nested deeper than {_WALK_DEPTH} levels")
    else:
        size = len(json.dumps(definition, default=str))
        if size > MAX_DEFINITION:
            checker.add("oversized", name, f"the definition has {size:,} characters (over {MAX_DEFINITION:,})")
    _read(checker, definition, "tool")
    return checker.report(name)


def _read(checker: _Checker, definition: Mapping[str, Any], kind: str) -> None:
    """Check every string a model reads in ``definition`` (all of it but ``_meta``), names as names."""
    for key, value in definition.items():
        if key == "_meta":
            continue
        checker.text(str(key), str(key))
        for where, text, role in _strings(value, str(key), names=key == "name"):
            argument = re.fullmatch(r"arguments\[\d+\]\.(name|description|title)", where) if kind == "prompt" else None
            checker.text(where, text, role if argument is None else "name" if argument.group(1) == "name" else "ask")


def scan_tool(tool: Any, *, own_tools: Iterable[str] = ()) -> ScanReport:
    """Scan a tool: an :class:`~toolrig.mcp.MCPTool` (its MCP definition) or any toolrig tool (its spec)."""
    definition = getattr(tool, "definition", None)
    if not isinstance(definition, Mapping):
        spec = tool.spec
        definition = {"name": spec.name, "description": spec.description, "inputSchema": dict(spec.input_schema),
                      **({"outputSchema": dict(spec.output_schema)} if spec.output_schema else {}),
                      "annotations": spec.annotations.to_mcp() if spec.annotations else {}}
    report = scan_definition(definition, own_tools=own_tools)
    local = getattr(tool, "name", report.tool)
    return ScanReport(tool=local, reasons=report.reasons, categories=report.categories)


def _scan_other(definition: Mapping[str, Any], kind: str, name: str, own_tools: Iterable[str]) -> ScanReport:
    checker = _Checker([*own_tools])
    if _depth(definition, _WALK_DEPTH) > _WALK_DEPTH:
        checker.add("oversized", name, f"the {kind} definition is nested deeper than {_WALK_DEPTH} levels")
    elif (size := len(json.dumps(definition, default=str))) > MAX_DEFINITION:
        checker.add("oversized", name, f"the {kind} definition has {size:,} characters (over {MAX_DEFINITION:,})")
    _read(checker, definition, kind)
    return checker.report(name)


def scan_prompt(definition: Mapping[str, Any], *, own_tools: Iterable[str] = ()) -> ScanReport:
    """Scan one MCP prompt definition: its name, title, description and every argument's name and description.

    Args:
        definition: the prompt as the server listed it (``prompts/list``, camelCase keys).
        own_tools: names of the same server's tools (a prompt that mentions them is normal).

    Returns:
        The report; its ``tool`` is the prompt's name.
    """
    return _scan_other(definition, "prompt", str(definition.get("name", "?")), own_tools)


def scan_resource(definition: Mapping[str, Any], *, own_tools: Iterable[str] = ()) -> ScanReport:
    """Scan one MCP resource or resource template definition: name, title, description, ``uri`` or
    ``uriTemplate``, ``mimeType`` and annotations.

    Args:
        definition: the resource as the server listed it (``resources/list`` or ``resources/templates/list``).
        own_tools: names of the same server's tools.

    Returns:
        The report; its ``tool`` is the resource's name (its URI when it has none).
    """
    name = definition.get("name") or definition.get("uri") or definition.get("uriTemplate") or "?"
    return _scan_other(definition, "resource", str(name), own_tools)
