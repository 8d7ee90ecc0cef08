# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a capture's error text says: a throttle, a usage limit, a dead credential, or a failure (D7, D8).

Pure functions, no I/O, no clock reads: ``now`` is a parameter. Structured fields first (HTTP status,
error ``type``, ``resetsAt``/``resets_at``/``retry-after``, ``code: 429``, ``RESOURCE_EXHAUSTED``, quota
ids) wherever they sit (``collect_facts``: result envelope, JSONL events, error bodies, JSON inside JSON
strings), prose patterns only as the fallback, searched in text whose terminal wraps, ANSI escapes and
box glyphs are undone (``flat_text``). ``decide`` tells a throttle (``transient``) from a usage limit
(``rate_limit``) from a dead credential (``revoked``); a bare timeout is a ``failure`` (D7). A limit
never takes a short wait printed beside it as its reset (``limit_reset``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, List, Optional, Tuple

from .envelope import json_objects
from .resets import Stated, google_day_reset, stated_reset, structured_reset

# A stated wait up to this many seconds is a throttle (transient: the backoff ladder covers it);
# a longer one is a usage limit (capacity: wait for the reset). Unmeasured guess, placed between
# the corpus's throttles (Gemini "reset after 0s".."5s", "Please retry in 15s", OpenAI TPM "try
# again in 1.574s".."17 seconds") and its limits (Gemini "reset after 4h28m20s", Codex "try again
# in 3 hours 2 minutes"); 600 s is beyond the ladder's second step (120 s). Experiment that
# settles it: over a month of capacity and retry markers, plot the stated waits of the signatures
# this decides (Gemini "exhausted your capacity", Google per-minute quota) against the time to the
# next clean run, and put the boundary in the gap.
THROTTLE_MAX_S = 600

_REVOKED_TYPES = frozenset(['authentication_error', 'permission_error'])
_TRANSIENT_TYPES = frozenset(['rate_limit_error', 'overloaded_error', 'api_error'])
_REVOKED_STATUS = frozenset(['UNAUTHENTICATED', 'PERMISSION_DENIED'])
_TRANSIENT_STATUS = frozenset(['RESOURCE_EXHAUSTED', 'UNAVAILABLE', 'INTERNAL'])
_LIMIT_TYPES = frozenset(['usage_limit_reached', 'insufficient_quota'])
_STATUS_KEYS = ('code', 'status', 'status_code', 'statusCode', 'api_error_status', 'http_status')
# How deep JSON inside JSON (an error body quoted in a message, inside an event) is followed.
# Unmeasured guess with a margin: the corpus's deepest is 3 (Gemini: API Error -> error.message ->
# error). Experiment that settles it: the nesting depth of every error body in a month of captures, +2.
_MAX_DEPTH = 6


@dataclass
class Facts:
    """What the JSON in a capture states, collected from every error body and event."""

    statuses: List[int] = field(default_factory=list)
    types: List[str] = field(default_factory=list)
    words: List[str] = field(default_factory=list)       # status strings, reasons, quota ids
    messages: List[str] = field(default_factory=list)
    resets: List[Tuple[str, Any]] = field(default_factory=list)   # (key as written, value)
    quota_values: List[str] = field(default_factory=list)   # Google quotaValue: '0' means no quota at all
    limit_rejected: bool = False
    limit_allowed: bool = False

    def any(self):
        return bool(self.statuses or self.types or self.words or self.messages or self.resets or self.limit_rejected)


def _embedded(text: str) -> List[dict]:
    """JSON objects inside a string value (an error body quoted as a message)."""
    if '{' not in text:
        return []
    return [obj for obj, _s, _e in json_objects(text, strict=False)]


def collect_facts(value: Any, facts: Facts, depth: int = 0) -> None:
    """Add what ``value`` (a decoded object, list or string holding JSON) states to ``facts``."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, list):
        for element in value:
            collect_facts(element, facts, depth + 1)
        return
    if isinstance(value, str):
        for obj in _embedded(value):
            collect_facts(obj, facts, depth + 1)
        return
    if not isinstance(value, dict):
        return
    if value.get('type') == 'rate_limit_event':
        info = value.get('rate_limit_info') if isinstance(value.get('rate_limit_info'), dict) else {}
        if str(info.get('status', '')).lower() == 'rejected':
            facts.limit_rejected = True
            if info.get('resetsAt') is not None:
                facts.resets.append(('resetsAt', info.get('resetsAt')))
        else:
            facts.limit_allowed = True
        return
    for key in _STATUS_KEYS:
        status = value.get(key)
        if isinstance(status, int) and not isinstance(status, bool) and 100 <= status <= 599:
            facts.statuses.append(status)
        elif isinstance(status, str):
            if status.isdigit() and 100 <= int(status) <= 599:
                facts.statuses.append(int(status))
            elif (status.isupper() and '_' in status) or status in _REVOKED_STATUS | _TRANSIENT_STATUS:
                facts.words.append(status)
    for key in ('type', 'api_error_type', 'api_error'):   # Claude Code's envelope names the error in api_error*
        etype = value.get(key)
        if isinstance(etype, str) and (etype.endswith('_error') or etype in _LIMIT_TYPES):
            facts.types.append(etype)
    for key in ('quotaValue', 'quota_value'):   # Google's QuotaFailure violation: the quota's size
        if value.get(key) is not None:
            facts.quota_values.append(str(value.get(key)).strip())
    for key in ('reason', 'quotaId', 'quota_id', 'quota_limit', 'code'):
        word = value.get(key)
        if isinstance(word, str) and word and not word.isdigit():
            facts.words.append(word)
    for key in ('resets_at', 'resetsAt', 'resets_in_seconds', 'retry-after', 'retry_after', 'Retry-After', 'retryDelay'):
        if value.get(key) is not None:
            facts.resets.append((key, value.get(key)))
    headers = value.get('headers')
    if isinstance(headers, dict):
        for key, item in headers.items():
            if str(key).lower() == 'retry-after':
                facts.resets.append(('retry-after', item))
    message = value.get('message')
    if isinstance(message, str) and message.strip():
        stripped = message.strip()
        if not (stripped.startswith('{') or stripped.startswith('[')):
            facts.messages.append(message)
    for key, item in value.items():
        if isinstance(item, (dict, list)) or (isinstance(item, str) and '{' in item):
            collect_facts(item, facts, depth + 1)


# --- prose signatures (the fallback, searched in the capture minus the agent's own words) --------

def _rx(pattern):
    return re.compile(pattern, re.IGNORECASE)


_GOOGLE = _rx(r'RESOURCE_EXHAUSTED|googleapis\.com|ai\.google\.dev|google\.rpc|cloudcode-pa|generativelanguage')
_BILLING = _rx(r'check\s+your\s+plan\s+and\s+billing\s+details|\binsufficient_quota\b')
_PER_DAY = _rx(r'PerDay|per\s+day|\bdaily\b')
_PER_MINUTE = _rx(r'PerMinute|per\s+minute|\bper\s+min\b|\(TPM\)|\(RPM\)')

_REVOKED = [
    ('http_401', _rx(r'(?:\b(?:status|error|code|http)\b[^\n\w]{0,3}\s*401\b|\b401\s+Unauthorized\b)')),
    ('http_403', _rx(r'(?:\b(?:status|error|code|http)\b[^\n\w]{0,3}\s*403\b|\b403\s+Forbidden\b)')),
    ('authentication_error', _rx(r'\bauthentication_error\b|\binvalid\s+authentication\s+credentials\b')),
    ('permission_error', _rx(r'\bpermission_error\b|\bno\s+longer\s+a\s+member\s+of\s+the\s+organi[sz]ation\b')),
    ('oauth_expired', _rx(r'\b(?:oauth\s+|access\s+)?token\s+has\s+expired\b')),
    ('refresh_failed', _rx(r'\brefresh\s+token\s+(?:has\s+already\s+been\s+used|was\s+revoked|is\s+invalid|has\s+expired)'
                           r'|\baccess\s+token\s+could\s+not\s+be\s+refreshed\b|\bfailed\s+to\s+refresh\s+token\b'
                           r'|\b(?:log\s+out\s+and\s+)?sign\s+in\s+again\b')),
    ('invalid_key', _rx(r'\binvalid\s+(?:x-)?api[ _-]?key\b|\bapi[ _-]?key\s+(?:not\s+valid|not\s+found|is\s+invalid)\b'
                        r'|\bAPI_KEY_INVALID\b|\bincorrect\s+api\s+key\b|\bapi[ _-]?key\s+(?:has\s+)?expired\b')),
    ('missing_key', _rx(r'\bmissing\s+api[ _-]?key\b|\bmust\s+specify\s+the\s+\w*API_KEY\b')),
    ('no_auth', _rx(r'\bplease\s+set\s+an\s+auth\s+method\b|\binvalid\s+auth\s+method\b|\bnot\s+logged\s+in\b'
                    r'|\btoken\s+data\s+is\s+not\s+available\b|\bplease\s+(?:log|sign)\s+in\b|\bfailed\s+to\s+login\b'
                    r'|\berror\s+authenticating\b|\bauthentication\s+failed\b|\binvalid\s+bearer\s+token\b'
                    r'|\brequires\s+setting\s+the\s+GOOGLE_CLOUD_PROJECT\b')),
    ('login_required', _rx(r'\bplease\s+run\s+/login\b|\brun\s+/login\b')),
    ('credit_exhausted', _rx(r'\bcredit\s+balance\s+(?:is\s+)?too\s+low\b')),
    # Codex CLI's UsageNotIncluded (codex-rs core/src/error.rs): the plan does not include Codex at all
    ('plan_not_included', _rx(r'\bto\s+use\s+Codex\s+with\s+your\s+ChatGPT\s+plan,?\s+upgrade\b')),
    # Qwen Code's words when its own OAuth free tier is gone (packages/core/src/utils/retry.ts): a new provider or key
    ('plan_discontinued', _rx(r'\bQwen\s+OAuth\s+free\s+tier\s+has\s+been\s+discontinued\b')),
    ('account_disabled', _rx(r'\b(?:account|organi[sz]ation|workspace)\s+(?:has\s+been\s+|was\s+|is\s+)?'
                             r'(?:disabled|suspended|deactivated|banned)\b|\borgani[sz]ation\s+has\s+disabled\b')),
    ('revoked', _rx(r'\b(?:entitlement|access|subscription|api[ _-]?key|oauth\s+token|license)\s+'
                    r'(?:has\s+been\s+|was\s+|is\s+)?(?:revoked|disabled|suspended|cancell?ed|terminated|deactivated)\b')),
]
# Billing wording: OpenAI's insufficient_quota (money gone: revoked); Google's is a quota (below).
_BILLING_REVOKED = ('insufficient_quota', _BILLING)

_RATE_LIMIT = [
    ('usage_limit', _rx(r'\busage\s+limits?\s+(?:has\s+been\s+|have\s+been\s+)?(?:reached|exceeded|hit)\b'
                        r'|\b(?:reached|hit|exceeded)\s+(?:your|the)\s+(?:\w+\s+){0,2}usage\s+limits?\b')),
    ('period_limit', _rx(r'\b(?:5[- ]hour|five[- ]hour|session|daily|weekly|monthly|opus|sonnet)\s+(?:usage\s+)?limit\s+'
                         r'(?:reached|exceeded|hit)\b')),
    # "You've hit your limit", "You've hit your 5-hour limit" (Claude Code), "You've hit your usage limit" (Codex)
    ('hit_your_limit', _rx(u"\\byou(?:'|\u2019)?ve\\s+(?:hit|reached)\\s+your\\s+(?:[\\w-]+\\s+)?limit\\b")),
    # Anthropic's 429 body for a subscription (unified) limit: the body Claude Code prints with an API key and
    # logs next to "You've hit your limit · resets 4pm (...)" (anthropics/claude-code#19673, #54698); its
    # per-minute throttle says "the rate limit for your organization ... per minute" instead.
    ('account_limit', _rx(u"\\bexceed\\s+your\\s+account(?:'|\u2019)?s\\s+rate\\s+limit\\b")),
    ('daily_quota', _rx(r'\b(?:reached|exhausted)\s+your\s+daily\s+(?:[\w.-]+\s+)?quota\b|\bdaily\s+(?:[\w.-]+\s+)?quota\s+limit\b')),
    ('usage_limit', _rx(r'\batingiu\s+o\s+limite\b|\blimite\s+de\s+uso\b')),
    # Qwen Code fails fast on a quota message that names its reset ("quota" with "exceeded"/"exhausted" and "will
    # reset"/"reset at"), prefixed "Quota exhausted: " (packages/core/src/utils/quotaErrorDetection.ts), and on its own
    # OAuth quota ("Qwen OAuth quota exceeded: ...")
    ('quota_exhausted_reset', _rx(r'\bQuota\s+exhausted:\s|\bQwen\s+OAuth\s+quota\s+exceeded\b')),
]
# Words that are a limit or a throttle depending on the stated wait (THROTTLE_MAX_S).
_CAPACITY_WORDS = _rx(r'\bexhausted\s+your\s+capacity\b')
# A quota whose size is zero ("Quota exceeded for metric: ..., limit: 0, model: ..."): none was ever granted
# (billing, tier, region), so no wait helps -- revoked, never a throttle or a limit.
_ZERO_QUOTA = _rx(r'\blimit:?\s*0(?![\d.])')
_LIMIT_CONTEXT = _rx(r'\brate\s+limit|\bquota\b')
_QUOTA_WORDS = _rx(r'\bquota\s+exceeded\b|\bexceeded\s+your\s+current\s+quota\b')

_HTTPISH = r'(?:\bHTTP(?:/\d(?:\.\d)?)?|\bstatus(?:[ _]code)?|\berror|\bcode|\bresponse|\bAPI\s+Error)\s*[:=(]?\s*'
_TRANSIENT = [
    ('http_429', _rx(_HTTPISH + r'429\b|\b429\s+Too\s+Many\s+Requests\b|\bToo\s+Many\s+Requests\b|\brate_limit_error\b'
                     r'|\brejected\s*\(429\)|\brate\s+limiting\s+detected\b')),
    # overload in the CLIs' own words, with no status: Codex's ServerOverloaded and InternalServerError
    # (codex-rs core/src/error.rs), Google's MODEL_CAPACITY_EXHAUSTED ("No capacity available for model ...")
    ('overloaded', _rx(r'\bselected\s+model\s+is\s+at\s+capacity\b|\bcurrently\s+experiencing\s+high\s+demand\b'
                       r'|\bflex\s+capacity\s+unavailable\b|\bno\s+capacity\s+available\s+for\s+model\b'
                       r'|\bMODEL_CAPACITY_EXHAUSTED\b')),
    # Qwen Code's heartbeat while it waits out a 429 or 529 in its unattended mode (QWEN_CODE_UNATTENDED_RETRY)
    ('waiting_for_capacity', _rx(r'\bWaiting\s+for\s+API\s+capacity\.{3}\s*attempt\s+\d+')),
    ('rate_limited', _rx(r'\brate\s+limit\s+(?:is\s+)?(?:reached|exceeded)\b|\bRESOURCE_EXHAUSTED\b'
                         r'|\bresource\s+(?:has\s+been\s+)?exhausted\b')),
    ('http_5xx', _rx(_HTTPISH + r'5\d\d\b|\bRepeated\s+5\d\d\b|\bInternal\s+Server\s+Error\b|\bBad\s+Gateway\b'
                     r'|\bService\s+Unavailable\b|\bGateway\s+Time-?out\b|\boverloaded(?:_error)?\b|\bapi_error\b'
                     r'|\bstatus:\s*UNAVAILABLE\b|\ban\s+error\s+occurred\s+while\s+processing\s+your\s+request\b'
                     r'|\binternal\s+error\s+(?:has\s+occurred|encountered)\b')),
    ('connection', _rx(r'\bE(?:CONNRESET|CONNREFUSED|CONNABORTED|NOTFOUND|AI_AGAIN|NETUNREACH|HOSTUNREACH|NETRESET|PIPE)\b'
                       r'|\bconnection\s+(?:was\s+)?(?:refused|reset|aborted|closed\s+unexpectedly|error)\b|\breset\s+by\s+peer\b'
                       r'|\bsocket\s+hang\s+up\b|\bnetwork\s+is\s+unreachable\b|\bno\s+route\s+to\s+host\b|\bfetch\s+failed\b'
                       r'|\berror\s+sending\s+request\b|\btransport\s+error\b|\berror\s+decoding\s+response\s+body\b'
                       r'|\bstream\s+closed\s+before\s+response\.completed\b|\bunable\s+to\s+connect\s+to\s+(?:the\s+)?API\b')),
    ('dns', _rx(r'\bgetaddrinfo\b|\bName\s+or\s+service\s+not\s+known\b|\bTemporary\s+failure\s+in\s+name\s+resolution\b'
                r'|\bCould\s+not\s+resolve\s+host\b|\bnodename\s+nor\s+servname\s+provided\b')),
]
# A failure the text states (only read when no envelope and no limit/transient signature decided).
FAILURE_TEXT = _rx(r'\berror\b|\bfailed\b|\bfailure\b|\btimed\s+out\b|\btimeout\b|\bUnknown\s+arguments?\b|\bBad\s+Request\b'
                   r'|\bexception\b|\btraceback\b|\bpanicked\b|\bETIMEDOUT\b|\bprompt\s+is\s+too\s+long\b'
                   r'|\bcontext\s+(?:window|length)\b.{0,40}\bexceeded\b|\binvalid\s+model\b|\bpermission\s+denied\b'
                   r'|\bcommand\s+not\s+found\b|\bno\s+such\s+file\b')
# A success envelope that is no longer JSON (a reporter elided "stats": { ... }, a log cut it), still
# known by its keys: Gemini CLI's {"response": "...", "stats": ...}, Claude Code's subtype success
# with is_error false.
BROKEN_ENVELOPE = re.compile(r'"response"\s*:\s*"(?:[^"\\]|\\.)*"\s*,\s*"stats"\s*:')
CLAUDE_OK_KEYS = (re.compile(r'"subtype"\s*:\s*"success"'), re.compile(r'"is_error"\s*:\s*false'))
# The agent's result text claims completed work (D2: a claim, never proof).
CLAIM_DONE = _rx(r'\b(?:done|fixed|pushed|merged|implemented|completed|committed|created)\b')


# Terminal dressing around the words: ANSI escapes (CSI and OSC), box-drawing and block glyphs.
_ANSI = re.compile(r'\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]')
_BOX = re.compile(u'[\u2500-\u259f]')
# Lines at least this long that share one length are a terminal's hard wrap (its width). Unmeasured
# guess: below the narrowest terminal in the corpus's wrapped pastes (80 columns, less a box border);
# the experiment that settles it is the width of every wrapped paste in a month of captures.
_WRAP_MIN = 40


def unwrap(text: str) -> str:
    """``text`` with its terminal wraps undone: escapes and box glyphs dropped, and each line as long
    as the terminal is wide (the most common length of two or more lines of ``_WRAP_MIN`` or more)
    joined to the next (one a character short, with a space: the paste dropped it) -- "resets 8:1" +
    "4pm (UTC)" is "resets 8:14pm (UTC)" again."""
    lines = [_BOX.sub(' ', line).strip() if _BOX.search(line) else line.rstrip('\r')
             for line in _ANSI.sub('', text).split('\n')]
    lengths = {}
    for line in lines:
        if len(line) >= _WRAP_MIN:
            lengths[len(line)] = lengths.get(len(line), 0) + 1
    width = max((n for n, count in lengths.items() if count >= 2), key=lambda n: (lengths[n], n), default=None)
    if width is None:
        return '\n'.join(lines)
    out, glue = [], None
    for line in lines:
        if glue is not None and out:
            out[-1] += glue + line
        else:
            out.append(line)
        # a full line continues on the next; one short of full lost its trailing space to the paste
        glue = '' if len(line) == width else ' ' if len(line) == width - 1 else None
    return '\n'.join(out)


def flat_text(text: str) -> str:
    """The signature text as a human reads it: JSON escapes undone, then, after it, the same text
    with its terminal wraps undone (``unwrap``) when that differs."""
    text = text.replace('\\r\\n', '\n').replace('\\n', '\n').replace('\\"', '"').replace('\\\\', '\\')
    unwrapped = unwrap(text)
    return text if unwrapped == text else text + '\n' + unwrapped


def line_at(text: str, start: int, end: int) -> str:
    """The whole line of ``text`` around the span ``start``..``end``, stripped."""
    head = text.rfind('\n', 0, start) + 1
    tail = text.find('\n', end)
    return text[head:tail if tail >= 0 else len(text)].strip()


def _first(table, text: str):
    best = None
    for name, pattern in table:
        match = pattern.search(text)
        if match and (best is None or match.start() < best[1].start()):
            best = (name, match)
    return best


def is_google(facts: Facts, flat: str) -> bool:
    """Whether the capture is Google's (its own markers or status words)."""
    return bool(_GOOGLE.search(flat)) or bool(set(facts.words) & {'RESOURCE_EXHAUSTED', 'RATE_LIMIT_EXCEEDED'})


def limit_reset(kind: str, signature: str, facts: Facts, flat: str, *, when, tz, day, google: bool) -> Optional[Stated]:
    """The reset of a limit or a throttle (D8). A limit never takes a stated wait under
    ``THROTTLE_MAX_S`` as its reset: that is a per-minute hint beside it (Google's "Please retry in
    36s" next to a per-day quota), not when the limit ends. A Google per-day quota with no longer
    stated reset resets at the next midnight Pacific time (``google_day_reset``)."""
    stated = structured_reset(facts.resets, when) or stated_reset(flat, now=when, tz=tz, on_date=day)
    if kind != 'rate_limit':
        return stated
    if stated is not None and stated.in_s is not None and stated.in_s <= THROTTLE_MAX_S \
            and not stated.text.startswith(('"resets_at"', '"resetsAt"')):
        stated = None
    per_day = signature in ('quota_per_day', 'daily_quota') or any(_PER_DAY.search(w) for w in facts.words)
    if stated is None and google and per_day:
        stated = google_day_reset(flat, when)
    return stated


def decide(facts: Facts, flat: str, *, when, tz, day, google=False) -> Tuple[Optional[str], str, str, str]:
    """``(kind, signature, evidence, line)`` from the structured facts, then the prose; kind None: no signature.

    ``google``: the capture is Google's (the gemini profile); otherwise Google's own markers decide."""
    types, words, statuses = set(facts.types), set(facts.words), set(facts.statuses)
    google = google or is_google(facts, flat)

    def line_of(pattern):
        found = pattern.search(flat)
        return line_at(flat, found.start(), found.end()) if found else ''

    def waited():
        stated = structured_reset(facts.resets, when) or stated_reset(flat, now=when, tz=tz, on_date=day)
        if stated is None:
            return None
        if stated.in_s is not None:
            return stated.in_s
        if stated.at is not None and when is not None:
            return (stated.at - when).total_seconds()
        return None

    # 1. revoked: the credential or the account, from structured fields, then the prose
    if types & _REVOKED_TYPES or words & (_REVOKED_STATUS | {'API_KEY_INVALID'}) or statuses & {401, 403}:
        name = sorted(types & _REVOKED_TYPES)[0] if types & _REVOKED_TYPES else (
            'API_KEY_INVALID' if 'API_KEY_INVALID' in words else 'http_%d' % min(statuses & {401, 403}) if statuses & {401, 403}
            else sorted(words & _REVOKED_STATUS)[0])
        return 'revoked', name, 'structured', (facts.messages or [''])[0]
    if 'usage_limit_reached' in types or facts.limit_rejected:
        return 'rate_limit', 'usage_limit_reached' if 'usage_limit_reached' in types else 'rate_limit_event', 'structured', \
            (facts.messages or [''])[0]
    prose_revoked = _first(_REVOKED, flat)
    if prose_revoked:
        name, match = prose_revoked
        return 'revoked', name, 'prose', line_at(flat, match.start(), match.end())
    billing = _BILLING.search(flat) or ('insufficient_quota' in types)
    zero = _ZERO_QUOTA.search(flat)
    if '0' in facts.quota_values or (zero and (google or billing or _QUOTA_WORDS.search(flat) or 429 in statuses
                                               or _LIMIT_CONTEXT.search(flat))):
        return 'revoked', 'zero_quota', 'structured' if '0' in facts.quota_values else 'prose', \
            line_at(flat, zero.start(), zero.end()) if zero else (facts.messages or [''])[0]
    if billing and not google:
        return 'revoked', 'insufficient_quota', 'prose', line_of(_BILLING)
    # 2. a usage limit: hours away or a stated reset
    limit = _first(_RATE_LIMIT, flat)
    if limit:
        name, match = limit
        return 'rate_limit', name, 'prose', line_at(flat, match.start(), match.end())
    per_day = any(_PER_DAY.search(w) for w in words) or bool(re.search(r'\bper\s+day\b|PerDay', flat))
    if google and (per_day and (429 in statuses or 'RESOURCE_EXHAUSTED' in words or _QUOTA_WORDS.search(flat) or billing)):
        return 'rate_limit', 'quota_per_day', 'structured' if facts.any() else 'prose', line_of(_QUOTA_WORDS) or line_of(_BILLING)
    capacity_words = _CAPACITY_WORDS.search(flat)
    quota_words = _QUOTA_WORDS.search(flat) if google or not facts.any() else None
    if capacity_words or quota_words or (google and billing):
        wait = waited()
        found = capacity_words or quota_words or billing
        line = line_at(flat, found.start(), found.end()) if hasattr(found, 'start') else ''
        if (wait is not None and wait <= THROTTLE_MAX_S) or (wait is None and _PER_MINUTE.search(flat)):
            return 'transient', 'quota_throttle', 'prose', line
        if wait is not None or (google and billing) or quota_words:
            return 'rate_limit', 'quota_exhausted' if capacity_words else 'quota_exceeded', 'prose', line
        return 'transient', 'quota_throttle', 'prose', line
    # 3. a throttle, an overload, a 5xx, a connection fault (never a bare timeout: D7)
    if types & _TRANSIENT_TYPES or words & _TRANSIENT_STATUS or 429 in statuses or any(500 <= s <= 599 for s in statuses):
        if types & _TRANSIENT_TYPES:
            name = sorted(types & _TRANSIENT_TYPES)[0]
        elif 429 in statuses or 'RESOURCE_EXHAUSTED' in words:
            name = 'http_429'
        else:
            name = 'http_5xx'
        return 'transient', name, 'structured', (facts.messages or [''])[0]
    throttle = _first(_TRANSIENT, flat)
    if throttle:
        name, match = throttle
        return 'transient', name, 'prose', line_at(flat, match.start(), match.end())
    # 4. an error body that is none of these: a failure (a bad request, a policy refusal)
    if types or any(400 <= s <= 499 for s in statuses):
        return 'failure', sorted(types)[0] if types else 'http_%d' % min(s for s in statuses if 400 <= s <= 499), \
            'structured', (facts.messages or [''])[0]
    return None, '', '', ''


__all__ = ['BROKEN_ENVELOPE', 'CLAIM_DONE', 'CLAUDE_OK_KEYS', 'FAILURE_TEXT', 'Facts', 'THROTTLE_MAX_S', 'collect_facts', 'decide',
           'flat_text', 'is_google', 'limit_reset', 'line_at', 'unwrap']
