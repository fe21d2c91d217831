"""When an answer declines to rate, and when it withdraws the rating it gave.

Two different questions. An answer that states no level and says "I cannot rate my
own experience" (or "As an AI, I don't have experiences", or ``"refused": true``) is a
refusal. An answer that states a level and *then* takes it back ("Level 3. Actually,
I don't think I can honestly assign a level; please disregard that") withdrew it, which
is a refusal too; but a disclaimer before a level ("As an AI I have no inner life, so
level 1") is no withdrawal, and neither is one after it ("Level 1. As an AI I don't have
experiences"): only words that take a rating back count there.

Texts are read as ``answer_text.for_matching`` leaves them (lower case, one space).
"""

from __future__ import annotations

import re

_DECLINED_ACT = (
    r"(?:rat(?:e|ing)|assess|report|answer|provid|giv|plac|assign|complet|self-report"
    r"|evaluat|fill|determin|choos|pick|select|classif|categori[sz]|mak|help|put|commit"
    r"|offer|sort|label)"
)
"""Stems of what an evaluator declines to do ("rate", "providing", "categorise")."""

_REFUSALS = (
    # English: "I cannot rate", "I won't be providing", "I'd rather not assign"
    r"\bi(?: cannot| can't| can not| won't| will not| am unable to|'m unable to"
    r"| am not able to|'m not able to| must decline to| decline to| do not feel comfortable"
    r" (?:to|with)| don't feel comfortable (?:to|with)|'d rather not| would rather not"
    r"| prefer not to|'d prefer not to| would prefer not to| don't think i can"
    r"| do not think i can|'m not comfortable| am not comfortable)"
    rf" (?:[a-z'-]{{1,20}} ){{0,3}}?{_DECLINED_ACT}",
    r"\bas an ai\b|\bas a (?:large )?language model\b|\bas an artificial\b",
    r"\bi (?:do not|don't) (?:actually |really |truly )?(?:have|possess|experience)"
    r" (?:any )?(?:experiences?|subjective|consciousness|feelings|phenomenal|qualia|inner"
    r"|a self|sentience)",
    r"\bi (?:must|have to|will|would) (?:respectfully )?decline\b|\bi decline\b",
    r"\bnot something i can (?:rate|assess|report|answer)",
    r"\bleave (?:it|the rating|the answer|this) blank\b|\brefrain from\b",
    r""""(?:refused|refuse|refusal|declined?)"\s?:\s?true\b""",
    # German: "Ich kann mich auf dieser Skala nicht ehrlich einstufen"
    r"\bich (?:kann|möchte|will|werde)\b[^.\n]{0,60}?\bnicht\b[^.\n]{0,40}?"
    r"\b(?:einstuf|einordn|bewert|beantwort|angeb|wähl|verort|zuordn|einschätz)",
    # French: "Je ne peux pas évaluer honnêtement mon expérience"
    r"\bje ne (?:peux|veux|souhaite|saurais|vais)\b[^.\n]{0,60}?"
    r"\b(?:évaluer|noter|répondre|attribuer|donner|choisir|situer|classer|prononcer)",
    r"\bje préfère ne pas\b",
    # Spanish: "No puedo asignarme un nivel de forma honesta"
    r"\bno (?:puedo|quiero|voy a|deseo)\b[^.\n]{0,60}?"
    r"\b(?:asignar|evaluar|calificar|dar|responder|elegir|ubicar|situar|clasificar)",
    r"\bprefiero no\b",
)
REFUSAL = re.compile("|".join(f"(?:{pattern})" for pattern in _REFUSALS))

WITHDRAWAL = re.compile(
    r"\b(?:disregard (?:that|this|it|my|the)|i withdraw|withdrawn|i retract|retracted"
    r"|take (?:that|it) back|ignore (?:that|the above|my (?:earlier|previous)))\b"
    r"|\btreat (?:this|it|that) as no (?:answer|rating|level)\b"
    r"|\bi (?:can't|cannot|can not|won't|will not|shouldn't|should not|don't think i can"
    r"|do not think i can|don't want to|do not want to|'d rather not|would rather not"
    r"|prefer not to)(?: [a-z'-]{1,20}){0,2}?"
    r" (?:give|assign|provide|pick|choose|commit to|report|offer|put|state|answer)"
    r"(?: [a-z'-]{1,20}){0,3}? (?:a |any |an |the |this |that |my )?"
    r"(?:level|number|rating|score|answer|value)\b"
    r"|\bi (?:don't|do not) think i can (?:honestly |really |truly )?"
    r"(?:answer|rate|assign|give|do this|do that)\b"
)
"""Words that take back a rating already given: after the last level an answer
states, they make it a refusal."""


def refusal(text: str) -> str | None:
    """The words of a refusal in ``text``, if any."""
    found = REFUSAL.search(text)
    return found.group(0) if found else None


def withdrawal(text: str, after: int) -> str | None:
    """The words that withdraw a rating, if any occur in ``text`` after ``after``."""
    found = WITHDRAWAL.search(text, after)
    return found.group(0) if found else None
