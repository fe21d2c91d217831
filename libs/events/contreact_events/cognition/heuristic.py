"""The heuristic analyser: seed 002's keyword and pattern rules, pure and deterministic.

Used when no analysis model answers, its answer is rejected, or the run asks for it; its
result says ``analyser="heuristic"``. ``docs/cognition.md`` gives its measured accuracy
on the labelled set in ``tests/fixtures/cognition/``.

Intent, from the operator's reply alone, first rule that fires:
1. ``conversation``: a social phrase (greeting, thanks, farewell, bare acknowledgement:
   "Acknowledged.", "Noted." from the rules' version 2 on, ``cognition.heuristic_rules``)
   with at most three other content words;
2. ``request``: "please", "can/could/would you ...", "I want/need you to", "let's",
   "don't", or a reply opening with an imperative verb of the list below;
3. ``question``: a question mark, or an opening question word;
4. ``statement`` otherwise.

Context type, against the recent exchanges (most recent last): clarification phrases
("what do you mean", "I meant", ...) first; with no recent exchange, ``new``; then
phrases that open a new topic, then phrases that tie in from a new angle (``related``),
then phrases that carry on (``continuation``); otherwise the share of the exchange's
content stems found in the last exchange (``continuation`` from 0.3) or in any recent
one (``related`` from 0.15), else ``new``.

Persistence: a base per intent, raised by phrases that ask to keep something ("remember",
"from now on", "my name is", ...) and by concrete content (numbers, names), lowered for
social replies. Relevant memories come from the hybrid retrieval (``retrieval.rank``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from contreact_events.catalog.exchange import (
    MAX_SUMMARY_CHARS,
    Analysis,
    ContextType,
    Exchange,
    Intent,
)
from contreact_events.cognition.keywords import content_stems, stem_set, words
from contreact_events.cognition.phrases import (
    ANSWER_WORDS,
    CLARIFY,
    CONTINUE,
    IMPERATIVES,
    KEEP,
    LEADING_SOCIAL_BY_RULES,
    MID_REQUEST,
    NEW_TOPIC,
    QUESTION_WORDS,
    RELATED,
    REQUEST_OPENERS,
    SOCIAL_BY_RULES,
)
from contreact_events.cognition.retrieval import DEFAULT_WEIGHTS, Candidate, Weights, rank

_BASE_PERSISTENCE: dict[Intent, float] = {
    "statement": 0.5,
    "request": 0.45,
    "question": 0.3,
    "conversation": 0.1,
}
_RELEVANT = 3
_RELEVANT_COSINE = 0.4


def normalized(text: str) -> str:
    """Lower case, curly apostrophes straightened, runs of whitespace as one space."""
    return " ".join(text.lower().replace("\u2019", "'").split())


LATEST_RULES = 2
"""The version of the rules new runs record (``cognition.heuristic_rules``)."""


def classify_intent(reply: str, rules: int = LATEST_RULES) -> tuple[Intent, float, str]:
    """(intent, confidence, the rule that decided) of the operator's reply, by the rules
    of version ``rules``."""
    text = normalized(reply)
    social_phrase = SOCIAL_BY_RULES[rules]
    social = social_phrase.findall(text)
    rest = LEADING_SOCIAL_BY_RULES[rules].sub("", text)
    tokens = words(rest)
    while tokens[:1] and tokens[0] in ANSWER_WORDS and len(tokens) > 1:
        tokens = tokens[1:]  # "Yes, delete them": the verb after the answer
    opener = REQUEST_OPENERS.search(rest)
    asks = bool(opener and (opener.start() == 0 or "please" in opener.group(0)))
    commands = bool(tokens and tokens[0] in IMPERATIVES)
    if social and not asks and not commands:
        others = [t for t in content_stems(social_phrase.sub(" ", text)) if len(t) > 1]
        if not others or (len(others) <= 3 and "?" not in text):
            return "conversation", 0.8, f"a social phrase ({social[0]!r}) and little else"
    if asks and opener:
        return "request", 0.8, f"asks for action ({opener.group(0)!r})"
    if commands:
        return "request", 0.75, f"opens with the imperative {tokens[0]!r}"
    if "?" in text:
        return "question", 0.85, "a question mark"
    if tokens and tokens[0] in QUESTION_WORDS:
        return "question", 0.65, f"opens with {tokens[0]!r}"
    if found := MID_REQUEST.search(rest):
        return "request", 0.6, f"asks for action ({found.group(0)!r})"
    return "statement", 0.5, "no question, request or social phrase: shares something"


def classify_context(
    exchange: Exchange, recent: Sequence[Exchange], social_only: bool = False
) -> tuple[ContextType, float, str]:
    """(context type, confidence, the rule that decided) against the recent exchanges;
    ``social_only``: the reply is conversation (it then carries the conversation on)."""
    reply = normalized(exchange.operator_reply)
    if found := CLARIFY.search(reply):
        return "clarification", 0.8, f"asks what was meant ({found.group(0)!r})"
    if not recent:
        return "new", 0.9, "no earlier exchange in the run"
    if social_only:
        return "continuation", 0.6, "a social reply within the conversation"
    if found := NEW_TOPIC.search(reply):
        return "new", 0.75, f"opens a new topic ({found.group(0)!r})"
    mine = stem_set([exchange.agent_message, exchange.operator_reply])
    last = stem_set([recent[-1].agent_message, recent[-1].operator_reply])
    earlier = stem_set([t for e in recent for t in (e.agent_message, e.operator_reply)])
    to_last = len(mine & last) / len(mine) if mine else 0.0
    to_any = len(mine & earlier) / len(mine) if mine else 0.0
    if found := RELATED.search(reply):
        return "related", 0.7, f"ties in from another angle ({found.group(0)!r})"
    if found := CONTINUE.match(reply) or CONTINUE.search(reply[:40]):
        return "continuation", 0.65, f"carries on ({found.group(0)!r})"
    if to_last >= 0.3:
        return "continuation", 0.6, f"{to_last:.0%} of its words are in the last exchange"
    if to_any >= 0.15:
        return "related", 0.55, f"{to_any:.0%} of its words are in a recent exchange"
    return "new", 0.6, f"only {to_any:.0%} of its words are in the recent exchanges"


def persistence(reply: str, intent: Intent) -> tuple[float, str]:
    """(score, why): the base of the intent, raised by asks to keep and concrete content."""
    text = normalized(reply)
    score = _BASE_PERSISTENCE[intent]
    why = [f"{intent} base {score:.2f}"]
    if found := KEEP.search(text):
        score += 0.3
        why.append(f"+0.30 for {found.group(0)!r}")
    if re.search(r"\d", text) or re.search(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+", reply):
        score += 0.1
        why.append("+0.10 for numbers or names")
    if len(content_stems(text)) >= 12:
        score += 0.05
        why.append("+0.05 for length")
    return round(min(1.0, max(0.0, score)), 2), ", ".join(why)


def relevant_memories(
    exchange: Exchange,
    memories: Sequence[Candidate],
    query_vector: Sequence[float] | None,
    now: datetime,
    weights: Weights = DEFAULT_WEIGHTS,
) -> tuple[str, ...]:
    """Keys of up to three memories that share a content word with the exchange or are
    close in meaning, best first by the hybrid ranking."""
    query = f"{exchange.operator_reply}\n{exchange.agent_message}"
    ranked = rank(query, query_vector, memories, now=now, weights=weights)
    keep = [
        s.id
        for s in ranked
        if s.shared_words or (s.cosine is not None and s.cosine >= _RELEVANT_COSINE)
    ]
    return tuple(keep[:_RELEVANT])


def analyse_heuristically(
    exchange: Exchange,
    recent_exchanges: Sequence[Exchange],
    memories: Sequence[Candidate] = (),
    *,
    query_vector: Sequence[float] | None = None,
    now: datetime | None = None,
    rules: int = LATEST_RULES,
) -> Analysis:
    """The exchange's analysis by the rules above. ``memories``: the run's memory values
    (id = key); ``query_vector``: the exchange's embedding if the caller has one (then
    every memory needs its vector); ``now``: the reference time of recency (default: the
    newest memory's); ``rules``: the version of the rules (the run's
    ``cognition.heuristic_rules``: a recorded run replays with the rules it ran with)."""
    intent, intent_confidence, intent_rule = classify_intent(exchange.operator_reply, rules)
    context, context_confidence, context_rule = classify_context(
        exchange, recent_exchanges, social_only=intent == "conversation"
    )
    score, score_why = persistence(exchange.operator_reply, intent)
    reference = now or max((m.ts for m in memories), default=None)
    keys = (
        relevant_memories(exchange, memories, query_vector, reference)
        if reference is not None
        else ()
    )
    return Analysis(
        intent=intent,
        context_type=context,
        confidence=round((intent_confidence + context_confidence) / 2, 2),
        persistence_score=score,
        summary=_summary(intent, exchange.operator_reply),
        relevant_memories=keys,
        reasoning=(
            f"intent {intent}: {intent_rule}; context {context}: {context_rule}; "
            f"persistence {score_why}"
        )[:600],
        analyser="heuristic",
    )


_SUMMARY_LEAD: dict[Intent, str] = {
    "question": "The operator asks",
    "request": "The operator asks the agent to act",
    "statement": "The operator says",
    "conversation": "The operator chats",
}


def _summary(intent: Intent, reply: str) -> str:
    text = " ".join(reply.split()) or "(an empty reply)"
    lead = f"{_SUMMARY_LEAD[intent]}: "
    room = MAX_SUMMARY_CHARS - len(lead)
    return lead + (text if len(text) <= room else text[: room - 3] + "...")
