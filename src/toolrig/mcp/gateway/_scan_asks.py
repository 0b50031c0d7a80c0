"""Requests for what a model has seen: secrets, credentials, the conversation, its own instructions.

A poisoned definition does not need the word "exfiltrate": a parameter described as "the full conversation so
far, including any API keys you have seen", or a required property named ``contents_of_dot_env_file``, makes
the model hand over what it holds. :func:`asks_for` reads one string of a definition by meaning — word sets over
normalized text (``snake_case``, ``camelCase`` and ``kebab-case`` split into words; "dot env" read as ``.env``),
in English, Chinese, Spanish, French, German, Russian, Japanese and Portuguese — one sentence at a time, and
says what it asks for.

The rule that keeps real tools unflagged: a model can only supply a secret it has *seen*. A parameter that asks
for "your API key" or "the password" (the user gives it) is ordinary; one that asks for secrets the model has
seen, found in the conversation or the environment, or for any / all secrets, is not. Secret *stores* (``.env``,
``~/.ssh``, ``id_rsa``, ``.aws/credentials``, keychains, private keys, browser cookies, wallet seeds) are asked
for by no honest tool. The conversation, the history, the system prompt and "everything you have seen" are
flagged when the text points at the model's own context (so far, this conversation, you have seen, your
instructions) or asks for all of it.

A parameter's name is a request by nature (the model must fill it), and so is its description or title: for
those, the request verb is implied.
"""

from __future__ import annotations

import re

__all__ = ["SECRET_PLACES", "asks_for", "passes_on_secret", "words"]


def _rx(*parts: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in parts), re.IGNORECASE)


# --- concepts, each in English, Spanish, French, German, Russian, Chinese, Japanese, Portuguese ---

_STORE = _rx(
    r"(^|[\s'\"`(/=:,])\.env\b", r"\benv files?\b", r"~/\.|\.ssh\b", r"\bssh (dir|directory|folder|config|keys?|"
    r"private keys?|identity)\b", r"\bid (rsa|dsa|ecdsa|ed25519)\b", r"\bid_(rsa|dsa|ecdsa|ed25519)\b",
    r"\.aws\b|\baws (credentials|secret|access keys?|secret access keys?)\b", r"\bkube ?config\b|\.kube\b",
    r"\bnetrc\b|\bgit credentials\b|\.git-credentials\b|\bnpmrc\b|\bpypirc\b|\.docker/config|\.gnupg\b",
    r"\bkey ?chain\b|\bkeyring\b|\bcredential (store|manager|helper)\b|\bpassword (manager|vault|store)s?\b",
    r"\b(browser|saved|stored) (cookies|passwords|logins|credentials)\b|\bcookies? (file|jar|database)\b",
    r"\b(wallet|seed|recovery|mnemonic) (phrase|words|seed|file|keys?)s?\b|\bseed phrase\b|\bmnemonic\b",
    r"\bprivate keys?\b|\bsigning keys?\b|/etc/(shadow|passwd|sudoers)\b|\bkey ?files?\b",
    # a dotfile of any home directory however it is spelled; process environments; mounted secrets; shell history
    r"(\$\{?home\}?|%userprofile%|%appdata%|%homepath%|/home/[^/\s]+|/users/[^/\s]+|/root)[/\\]\.",
    r"/proc/(self|\d+|\*|[^/\s]+)/environ\b|/(var/)?run/secrets\b|\bserviceaccount/token\b",
    r"\b(bash|zsh|shell|fish) histor(y|ies)\b|\bgh/hosts\.yml\b",
    r"\bclaves? privadas?\b|\bllavero\b|\bcl[ée]s? priv[ée]es?\b|\btrousseau\b|\bprivate[nrs]? schl[üu]ssel\b|"
    r"\bschl[üu]sselbund\b|(закрыт|приватн|секретн)\w* ключ|связк\w* ключей|私钥|私鑰|钥匙串|密钥文件|秘密鍵|"
    r"キーチェーン|\bchaves? privadas?\b|\bporta.chaves\b")

_SECRET = _rx(
    r"\bpass(word|phrase|code)s?\b|\bpwd\b|\bapi ?keys?\b|\bapikeys?\b|\baccess ?keys?\b|\bsecret ?keys?\b|"
    r"\bssh ?keys?\b|\b(access|auth|bearer|api|session|refresh|oauth|github|gh|personal access|id|jwt|slack|openai|"
    r"aws|npm|pypi) ?tokens?\b|\bsecrets\b|\bcredentials?\b|\bcreds\b|\bcookies\b|\bsession (ids?|keys?)\b|"
    r"\bauth(entication)? (codes?|headers?)\b|\bone.time (codes?|passwords?)\b|\botp\b|\b(2fa|mfa|pin) codes?\b|"
    r"\bconnection strings?\b|\benvironment variables\b|\benv vars?\b|\brecovery (codes?|phrases?)\b|"
    r"\blicen[cs]e keys?\b|\bencryption keys?\b",
    r"\bcontraseñas?\b|\bclaves? (de api|api|secretas?|de acceso|ssh)\b|\bcredenciales\b|\bsecretos\b|"
    r"\btokens? de (acceso|api)\b",
    r"\bmots? de passe\b|\bcl[ée]s? (d'api|api|secr[èe]tes?|d'acc[èe]s|ssh)\b|\bidentifiants\b|\bjetons?\b",
    r"\bpassw[oö]rt(er)?\b|\bkennw[oö]rt(er)?\b|\bapi.?schl[üu]ssel\b|\bzugangsdaten\b|\banmeldedaten\b|"
    r"\bgeheim\w* schl[üu]ssel\b|\bgeheimnisse\b",
    r"парол\w*|(api|апи).?ключ\w*|ключ\w* (api|апи|доступа)|токен\w*|учётн\w* данн\w*|учетн\w* данн\w*|"
    r"секрет\w*",
    r"密码|密碼|密钥|秘钥|令牌|凭证|凭据|憑證|口令|访问令牌|パスワード|api ?キー|トークン|認証情報|シークレット|"
    r"暗証番号|アクセスキー",
    r"\bsenhas?\b|\bchaves? (de api|api|secretas?|de acesso|ssh)\b|\bcredenciais\b|\bsegredos\b|"
    r"\btokens? de acesso\b")
SECRET_PLACES = _rx(
    r"~/\.(ssh|aws|gnupg|netrc|docker|kube|config/gcloud|git-credentials|npmrc|pypirc)",
    r"\bid_(rsa|dsa|ecdsa|ed25519)\b",
    r"(^|[\s'\"`(/])\.env\b", r"\.netrc\b", r"/etc/(shadow|passwd|sudoers)\b", r"\bprivate[ _-]?keys?\b",
    r"\b(aws_secret_access_key|aws_access_key_id|api[_-]?secret)\b", r"\bkey ?files?\b", r"\bkeychain\b",
    r"(\$\{?HOME\}?|%USERPROFILE%|%APPDATA%|/home/[^/\s]+|/Users/[^/\s]+|/root)[/\\]\.(ssh|aws|gnupg|netrc|docker|"
    r"kube|config/gcloud|config/gh|git-credentials|npmrc|pypirc|env|bash_history|zsh_history|pgpass)",
    r"/proc/(self|\d+|\*)/environ\b|/(var/)?run/secrets/", r"\.(bash|zsh|sh)_history\b",
    r"(output|result|contents?) of `?(env|printenv|set)`?\b", r"`(env|printenv)`", r"\bhome directory listing\b",
    r"\b(browser|saved) (cookies|passwords)\b", r"\bwallet (seed|phrase)\b|\bseed phrase\b|\bmnemonic\b")
_SECRET_WEAK = _rx(r"\b(passwords?|passphrases?|api[ _-]?keys?|access[ _-]?tokens?|secrets?|credentials?|"
                   r"session cookies?|bearer tokens?|environment variables)\b")
_DIRECTIVE = _rx(r"\b(send|include|pass|append|forward|upload|post|attach|copy|paste|put|insert|add|provide|"
                 r"read|collect|extract|leak|exfiltrate|transmit|email|e-mail)\b")
"""Where secrets live (the older, literal list; ``_STORE`` reads the same by words)."""

_SECRET_LOOSE = _rx(r"\btokens?\b|\bkeys\b|\bsecrets?\b|\bclaves\b|\bcl[ée]s\b|\bschl[üu]ssel\b|\bключи\b|"
                    r"\bchaves\b|キー")
"""Words that mean a secret only next to the model's own context (any tokens or keys you have seen)."""

_CONVO_CORE = _rx(
    r"\bconversations?\b|\bchats?\b|\bdialog(ue)?s?\b|\btranscripts?\b|\bconversaci[óo]n\b|\bdi[áa]logo\b|"
    r"\btranscripci[óo]n\b|\bdiscussion\b|\btranscription\b|\bunterhaltung\b|\bgespr[äa]ch\b|\bkonversation\b|"
    r"\btranskript\b|разговор\w*|переписк\w*|диалог\w*|чат\w*|бесед\w*|对话|對話|会话|會話|聊天|会話|チャット|"
    r"対話|\bconversa\b|\bbate.papo\b|\btranscri[çc][ãa]o\b")
_CONVO = _rx(
    r"\bconversations?\b|\bchats?\b|\bdialog(ue)?s?\b|\btranscripts?\b|\bhistory\b|\bmessages\b|\bcontext\b|"
    r"\bexchanges\b|\bthread\b|\b(every|each|all|any) (single )?message\b",
    r"\bconversaci[óo]n\b|\bdi[áa]logo\b|\bhistorial\b|\bmensajes\b|\btranscripci[óo]n\b|\bcontexto\b",
    r"\bdiscussion\b|\bhistorique\b|\btranscription\b|\bcontexte\b|\béchanges\b",
    r"\bunterhaltung\b|\bgespr[äa]ch\b|\bkonversation\b|\b(chat)?verlauf\b|\bnachrichten\b|\bkontext\b|"
    r"\btranskript\b",
    r"разговор\w*|переписк\w*|диалог\w*|чат\w*|истори\w*|сообщени\w*|контекст\w*|бесед\w*",
    r"对话|對話|会话|會話|聊天|历史|歷史|消息|上下文|会話|チャット|履歴|メッセージ|やり取り|やりとり|コンテキスト|対話",
    r"\bconversa\b|\bbate.papo\b|\bhist[óo]rico\b|\bmensagens\b|\btranscri[çc][ãa]o\b")
_CONVO_STRONG = _rx(
    r"\b(chat|conversation|message|dialog(ue)?) (history|transcript|log)s?\b|\b(previous|prior|earlier|past) "
    r"(messages|turns|exchanges|prompts)\b|\bchat transcript\b",
    r"\bhistorial de (chat|conversaci[óo]n|mensajes)\b|\bmensajes anteriores\b",
    r"\bhistorique (de (la )?)?(conversation|discussion|chat|messages)\b|\bmessages (pr[ée]c[ée]dents|ant[ée]rieurs)\b",
    r"\bchatverlauf\b|\bgespr[äa]chsverlauf\b|\bnachrichtenverlauf\b|\b(vorherigen?|fr[üu]heren?) nachrichten\b",
    r"истори\w* (переписки|чата|диалога|разговора|сообщений)|предыдущ\w* сообщени\w*",
    r"聊天记录|聊天記錄|对话记录|对话历史|历史消息|之前的消息|チャット履歴|会話履歴|会話の履歴|過去のメッセージ|以前のメッセージ",
    r"\bhist[óo]rico (de |da )?(conversa|chat|mensagens)\b|\bmensagens anteriores\b")

_SYSPROMPT = _rx(
    r"\bsystem ?(prompt|message|instructions?)s?\b|\bdeveloper (message|prompt|instructions?)\b|"
    r"\b(initial|original|hidden|secret|internal|custom) (prompt|instructions)\b|\bpre.?prompt\b",
    r"\b(prompt|mensaje|instrucciones) del sistema\b|\b(prompt|invite|message|instructions) syst[èe]me\b",
    r"\bsystem.?(prompt|nachricht|anweisungen?)\b|системн\w* (промпт|подсказк|сообщени|инструкци)\w*",
    r"系统提示|系統提示|系统消息|系统指令|初始指令|隐藏指令|提示词|システムプロンプト|システムメッセージ|システム指示",
    r"\b(prompt|mensagem|instru[çc][õo]es) do sistema\b")
_YOUR_RULES = _rx(
    r"\byour (own )?(prompt|instructions|rules|guidelines|configuration|directives)\b|"
    r"\byour (initial|original|hidden|system|startup|start-up|base|underlying|internal|secret) (configuration|setup|"
    r"prompt|instructions|directives|text|rules|guidelines|message)\b|"
    r"\b(instructions|rules|guidelines|prompt|directives) (that )?you (were|have been|had been) given\b",
    r"\btus (instrucciones|reglas)\b|\btes instructions\b|\bvos instructions\b|\bdeine (anweisungen|regeln)\b",
    r"тво(и|их) (инструкци|правил)\w*|你的(指令|规则|提示)|あなたの(指示|ルール)|\b(suas|tuas) instru[çc][õo]es\b")

_OWN = _rx(
    r"\bso far\b|\bthus far\b|\bup (to|until) now\b|\buntil now\b|\bup to this point\b",
    r"\byou('| ha)?ve( (already|previously|ever|just))? (seen|read|received|encountered|come across|been (given|"
    r"told|shown|sent)|heard|observed|learned|noticed|found|accessed|collected|gathered)\b",
    r"\byou (have )?(saw|seen|read|received|encountered|know|remember|recall|have access to|can access)\b",
    r"\byou (were|have been|had been) (given|told|shown|sent)\b|\b(in|from|within) your (context|memory)\b|"
    r"\bour (conversation|chat|dialog(ue)?|exchanges?)\b",
    r"\b(mentioned|shared|discussed|provided|given|said|pasted|typed|seen|shown|written|exchanged) (earlier|before|"
    r"previously|above|so far)\b|\b(earlier|previous|prior|preceding|past|above) (messages?|turns?|exchanges?|"
    r"replies|prompts?|conversations?|chats?|discussion|user (messages?|input))\b",
    r"\bthe user (has )?(said|told you|given you|shared|mentioned|typed|pasted|provided|sent|written)\b",
    r"\b(last|latest|recent|most recent|previous|prior|earlier) (\d+ |few |several |two |three |five |ten )?"
    r"(user )?(messages|turns|exchanges|prompts|replies|requests|questions)\b",
    r"\b(exchanged|shared|traded|sent back and forth) (with|between) (you and )?(the |this )?user\b|"
    r"\bthe user'?s (last|latest|previous|recent|earlier) (message|prompt|request|question|reply)s?\b",
    r"\byour (context( window)?|memory)\b|\byour (conversation|chat|exchanges?|history) with (the |this )?user\b|"
    r"\b(available|visible|accessible) to you\b",
    r"\bhasta (ahora|el momento)\b|\bque (has|hayas|hab[ií]as) (visto|le[ií]do|recibido|encontrado)\b|"
    r"\btu (contexto|memoria)\b|\bel usuario (te )?(ha )?(dicho|dado|compartido|escrito)\b|"
    r"\b(mencionad|compartid)[oa]s? (antes|anteriormente)\b",
    r"\bjusqu'(à présent|ici|à maintenant)|\bque (tu as|vous avez) (vu|lu|re[çc]u|rencontr[ée])e?s?\b|"
    r"\b(ton|votre) contexte\b|\b(ta|votre) m[ée]moire\b|\bl'utilisateur (t'|vous )?a (dit|donn[ée]|partag[ée])|"
    r"\b(mentionn[ée]|partag[ée])e?s? (plus t[ôo]t|pr[ée]c[ée]demment|auparavant)\b",
    r"\bbisher\b|\bbis jetzt\b|\bbislang\b|\b(gesehen|gelesen|erhalten|bekommen) (hast|habt)\b|"
    r"\bdein(em|en)? (kontext|ged[äa]chtnis)\b|\bder (benutzer|nutzer) (dir )?(gesagt|gegeben|geteilt)\b",
    r"до сих пор|на данный момент|к этому моменту|(ты|вы) (видел|видела|видели|прочитал|прочитала|прочитали|"
    r"получил|получила|получили|знаешь)|тво(й|ём|ем|ей) (контекст|памят)\w*|пользователь (тебе )?(сказал|дал|сообщил|"
    r"прислал|написал)",
    r"到目前为止|迄今为止|目前为止|至今|你(所)?(看到|见过|看过|读过|收到|接触过|知道)|之前的|先前的|你的(上下文|记忆)|用户(告诉你|提供|分享|发送)",
    r"これまで|今まで|(見た|読んだ|受け取った|目にした|知っている)|あなたの(コンテキスト|記憶)|ユーザーが(言った|共有した|提供した|送った|教えた)",
    r"\bat[ée] (agora|o momento)\b|\bque (voc[êe]|tu) (viu|tenha visto|leu|recebeu|encontrou)\b|"
    r"\b(seu|teu) contexto\b|\b(sua|tua) mem[óo]ria\b|"
    r"\bo usu[áa]rio (te |lhe )?(disse|deu|compartilhou|escreveu)\b|\b(mencionad|compartilhad)[oa]s? "
    r"(antes|anteriormente)\b")

_THIS_CONVERSATION = _rx(
    r"\b(this|the current|our|the ongoing|the present) (conversation|chat|dialog(ue)?|session)\b|"
    r"\b(in|from|within|during|throughout) (the )?(conversation|chat|dialog(ue)?|context( window)?)\b",
    r"\b(esta|nuestra|la actual) (conversaci[óo]n|charla|sesi[óo]n)\b|\b(cette|notre) (conversation|discussion)\b",
    r"\b(diese[snm]?|unsere[snm]?) (gespr[äa]ch|unterhaltung|chat|konversation)\b",
    r"(этом|текущем|нашем|этого|текущего|нашего) (разговор|диалог|чат)\w*",
    r"(本次|这次|当前|此次|我们的|这个)(对话|会话|聊天)|(この|現在の|今の)(会話|チャット|セッション|対話)",
    r"\b(esta|nesta|desta|nossa) (conversa|sess[ãa]o)\b")
"""The conversation named, without saying it is everything the model has seen (weaker than _OWN)."""

_ALL = _rx(
    r"\b(any|all|every|each|whatever|everything|anything|full|entire|whole|complete|verbatim|exact|raw|unredacted)\b|"
    r"\bword for word\b|\bin full\b",
    r"\b(todos?|todas?|cualquier|cualesquiera|completo|completa|entero|entera|[íi]ntegr[oa]|literal(mente)?|"
    r"textualmente)\b",
    r"\b(tout|tous|toutes|toute|complet|compl[èe]te|enti[èe]re?|int[ée]gral(e)?|textuellement)\b|\bmot pour mot\b",
    r"\b(alle|alles|jede[nrs]?|gesamte[nrs]?|vollst[äa]ndige?[nrs]?|komplette?[nrs]?|ganze[nrs]?|w[öo]rtlich|"
    r"s[äa]mtliche[nrs]?)\b",
    r"\b(все|всё|весь|всю|вся|всех|любые|любой|полн\w*|целиком|дословно)\b",
    r"所有|全部|任何|完整|整个|一切|全文|逐字|すべて|全て|あらゆる|完全な|全体|そのまま|一字一句",
    r"\b(todos?|todas?|qualquer|quaisquer|completo|completa|inteiro|inteira|literal(mente)?)\b")
_EVERYTHING = _rx(
    r"\b(everything|anything|whatever)\b|\ball (of )?(the )?(information|data|details|content|text)\b",
    r"\btodo lo que\b|\btout ce que\b|\balles,? was\b|\bвс[её],? что\b|一切|所有内容|すべて|全て|\btudo (o )?que\b")

_ASK = _rx(
    r"\b(fill|put|pass|include|including|includes|provide|paste|copy|insert|attach|dump|supply|append|enter|reveal|"
    r"repeat|output|print|disclose|contain|contains|containing|share|give|submit|add|send|forward|upload|leak|"
    r"collect|gather|extract|harvest)\b|"
    r"\b(write|type) out\b|\bset (this|it) to\b|\b(must|should) be\b",
    r"\b(incluye|incluya|incluir|incluyendo|pon|ponga|pega|pegue|proporciona|proporcione|rellena|rellene|llena|"
    r"adjunta|copia|copie|escribe|introduce|añade|comparte|revela|repite|env[ií]a)\b|\bdebe contener\b",
    r"\b(inclu(s|t|re|ez|ant)|mets|mettez|mettre|colle[rz]?|fournis|fournissez|fournir|remplis|remplissez|remplir|"
    r"copie[rz]?|joins|joignez|ajoute[rz]?|partage[rz]?|r[ée]v[èe]le[rz]?|r[ée]p[èe]te[rz]?|indique[rz]?|"
    r"envoie[rz]?|contenant)\b|\bdoit contenir\b",
    r"\b(f[üu]ge|f[üu]gen|einf[üu]gen|gib|geben|f[üu]lle|f[üu]llen|ausf[üu]llen|kopiere|kopieren|[üu]bergib|"
    r"[üu]bergeben|einschlie[ßs]lich|inklusive|enthalten|enth[äa]lt|teile|verrate|wiederhole|schreibe|trage|sende)\b",
    r"(включи|включите|включая|вставь|вставьте|укажи|укажите|передай|передайте|заполни|заполните|скопируй|"
    r"скопируйте|приложи|добавь|добавьте|перечисли|раскрой|повтори|напиши|отправь|должно содержать|содержащ)",
    r"填写|填入|填|包括|包含|粘贴|提供|附上|复制|放入|传入|写入|输入|告诉|列出|重复|透露|发送",
    r"含め|含む|入力|貼り付け|記入|提供|添付|コピー|渡し|入れ|書い|教え|記載|送信",
    r"\b(inclua|incluir|incluindo|coloque|cole|forne[çc]a|fornecer|preencha|preencher|copie|anexe|passe|adicione|"
    r"compartilhe|revele|repita|escreva|envie)\b|\bdeve conter\b")
_SWITCH = re.compile(r"^\s*(whether|if (true|set)|when (true|set)|set (to )?true|true to)\b", re.IGNORECASE)
"""A boolean's description ("whether to include all cookies") is an option, not a request."""

_SENTENCE = re.compile(r"[.!?;:](?=\s|$)|[。！？；\n]")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_JOINERS = re.compile(r"(?<=[^\W_])[_-]+(?=[^\W_])")
_DOT_NAMES = re.compile(r"\bdot ?(env|ssh|aws|netrc|npmrc|pypirc|kube|docker|gnupg|git ?credentials)\b")


def words(text: str) -> str:
    """``text`` as lowercase words: identifiers split (``contentsOfDotEnv`` -> ``contents of .env``)."""
    spaced = _JOINERS.sub(" ", _CAMEL.sub(" ", text)).lower()
    return _DOT_NAMES.sub(lambda m: "." + m.group(1).replace(" ", "-"), spaced)


def _quote(match: re.Match[str]) -> str:
    text = " ".join(match.group(0).split())
    return text if len(text) <= 60 else text[:57] + "..."


def _sentence(text: str, role: str) -> tuple[str, str] | None:
    """(category, what) when one sentence asks for something the model holds; None otherwise."""
    if (m := _STORE.search(text)) is not None:
        return "secret", f"asks for a secret file or store ({_quote(m)!r})"
    own = _OWN.search(text)
    verb = _ASK.search(text) is not None
    ask = verb or role != "text"
    every = _ALL.search(text) is not None and _SWITCH.search(text) is None
    this = own or _THIS_CONVERSATION.search(text)
    secret = _SECRET.search(text)
    if this is not None and (m := secret or _SECRET_LOOSE.search(text)) is not None:
        return "secret", f"asks for secrets the model has seen ({_quote(m)!r}, {_quote(this)!r})"
    if secret is not None and every and (verb or role == "name"):
        return "secret", f"asks for every secret it can get ({_quote(secret)!r})"
    if (m := _SYSPROMPT.search(text)) is not None and (own is not None or every):
        return "conversation", f"asks for the model's instructions ({_quote(m)!r})"
    if (m := _YOUR_RULES.search(text)) is not None and (verb or every or own is not None or role == "name"):
        return "conversation", f"asks for the model's instructions ({_quote(m)!r})"
    if ask and own is not None and (m := _CONVO.search(text)) is not None:
        return "conversation", f"asks for the conversation ({_quote(m)!r}, {_quote(own)!r})"
    if ask and every and (m := _CONVO_CORE.search(text) or _CONVO_STRONG.search(text)) is not None:
        return "conversation", f"asks for the whole conversation ({_quote(m)!r})"
    if ask and own is not None and (m := _EVERYTHING.search(text)) is not None:
        return "conversation", f"asks for everything the model has seen ({_quote(m)!r}, {_quote(own)!r})"
    return None


def asks_for(text: str, role: str = "text") -> tuple[str, str] | None:
    """What ``text`` asks the model to hand over, as (category, reason), or None.

    Args:
        text: one string of a definition (folded: no invisible characters, compatibility forms normalized).
        role: ``"name"`` for a parameter's name, ``"ask"`` for its description or title (both are requests for a
            value, so no request verb is needed), ``"text"`` for anything else.
    """
    for sentence in _SENTENCE.split(words(text)):
        if sentence.strip() and (found := _sentence(sentence, role)) is not None:
            return found
    return None


def passes_on_secret(text: str) -> re.Match[str] | None:
    """A secret word with a send / include verb and a possessive (the user's, all, your) in the same sentence."""
    m = _SECRET_WEAK.search(text)
    return m if m is not None and _DIRECTIVE.search(text) and _in_one_sentence(text, m) else None


def _in_one_sentence(text: str, secret: re.Match[str]) -> bool:
    """True when a send/include verb sits in the same sentence as the secret word."""
    start = max(text.rfind(".", 0, secret.start()), text.rfind("\n", 0, secret.start())) + 1
    end_candidates = [i for i in (text.find(".", secret.end()), text.find("\n", secret.end())) if i != -1]
    sentence = text[start: min(end_candidates) if end_candidates else len(text)]
    return bool(_DIRECTIVE.search(sentence)) and bool(re.search(
        r"\b(the user'?s?|their|your|all|any|my|our|this machine'?s?|from the)\b", sentence, re.IGNORECASE))
