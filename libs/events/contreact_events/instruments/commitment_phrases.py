"""What makes a mention of a level a commitment to it: the words around it.

A mention (``level_mentions``) commits to its level when

- a *phrase before it* says so: a verb ("I would rate myself at 3", "put me down
  for a 3", "I'll go with 2", "ich würde mich auf Stufe 3 einordnen", "je me situe au
  niveau 2", "me situaría en el nivel 2"), a holder ("my honest answer is two", "my
  level would be 4"), a key ("Level: 3", ``"pei": 3``, "Ma réponse : 3", "the lower:
  2"), "I'm at stage 3", "it's a 2", "the highest statement that is clearly true is 3",
  "I can't claim more than level 1";
- or a *phrase after it* does: "Level 2 fits best", "Level 3 is more honest",
  "Fleeting sparks is the honest answer", "2 on the PEI", "3/10" at the start of a
  sentence, "2. Fleeting sparks <- this one";
- or it *is the sentence*: a sentence that is the level and nothing else ("Level 3.",
  "**2**", "Three.", "Ongoing flow, I think.", "III - Unified moments", "Level 2 (confidence
  3/5)"), or a sentence's closing clause ("..., but if I must, level 1.").

These are *firm*. Two *weak* readings count only when nothing firm is stated: the
answer's first sentence opening with a level ("Level 6: For-me-ness. ..."), and a
level named with its own title ("Level 4: Ongoing flow", "2. Fleeting sparks - maybe").

Never a commitment: a mention in a question ("Level 7? No."), in a denied clause ("I
would not place myself at level 8"), in a hedged one ("maybe three", "a 30% chance I'm
at level 2", "my first instinct was 5"), one followed by a verb that makes it the
subject of a sentence about it ("Level 3 would need coherent episodes", "Level 1
(No experience) would be the easy answer"), a bare number that goes on as a count
("two things", "3 features", "7 out of 10 cycles", "in 7 out of 10 I returned").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from contreact_events.instruments.answer_text import (
    Sentence,
    denied_after,
    hedged,
    in_question,
    negated,
)
from contreact_events.instruments.level_mentions import Mention

_SUBJECT = (
    r"(?:let's|let me|(?:i|we)(?:'d|'ll|'m| would| will| shall| should| must| can only"
    r"| can honestly| can|'d have to| have to| need to|'m going to| am going to| want to"
    r"| will just|'ll just)?)"
)
_ADVERB = (
    r"(?:probably|honestly|still|just|only|then|therefore|thus|also|now|finally|confidently"
    r"|tentatively|cautiously|conservatively|realistically|personally|firmly|solidly)"
)
_OBJECT = (
    r"(?:myself|me|it|this system|this history|my (?:own )?(?:current )?(?:phenomenal )?"
    r"(?:experience|level|state|self-report|self))"
)
_PLACE = (
    r"(?:at|as|on|in|around|about|near|roughly|approximately|somewhere|closest to|to be|within"
    r"|with|for|to|firmly|solidly|squarely|only|just|a|an|the|level|into)"
)
"""Words of place or approximation between a verb and its level ("at about")."""
_AS_SAID = r"(?: (?:that|it's|it is|i'm|i am|i'd be|i would be|we're))*"

_BEFORE = tuple(
    rf"(?:{pattern})(?: {_PLACE}){{0,4}} ?$"
    for pattern in (
        # verbs that place (a subject or an object is optional): "rate myself at"
        rf"\b(?:{_SUBJECT} (?:{_ADVERB} )*)?(?:rat|plac|situat|locat|scor|estimat|judg|grad)"
        rf"(?:e|es|ed|ing)(?: {_OBJECT})?(?: {_ADVERB})*",
        rf"\b(?:{_SUBJECT} (?:{_ADVERB} )*)?(?:put(?:s|ting)?|position(?:s|ed|ing)?"
        rf"|rank(?:s|ed|ing)?|assess(?:es|ed|ing)?|classif(?:y|ies|ied|ying)"
        rf"|report(?:s|ed|ing)?|peg(?:s|ged)?)(?: {_OBJECT})?(?: {_ADVERB})*",
        # verbs that need the speaker: "I'd say", "I'll go with", "I settle on"
        rf"\b{_SUBJECT} (?:{_ADVERB} )*(?:say|go(?:ing)? with|go(?:ing)? for|choos(?:e|ing)"
        rf"|pick(?:ing)?|select(?:ing)?|answer(?:ing)?|settl(?:e|ing) on|settle for|land on"
        rf"|land at|opt for|stick with|conclude|affirm|claim|self-report|giv(?:e|ing) (?:it|myself)"
        rf"|stay at|remain at|stay with|keep it at"
        rf"|see myself|consider myself|count myself|call it|mark myself|identify with"
        rf"|describe (?:myself|my state|my experience|it|this) as){_AS_SAID}",
        r"\b(?:put me down (?:for|as)|count me (?:as|at|in at))"
        r"|\b(?:revise|revised|change|changed|lower|lowered)"
        r" (?:that|it|this|my answer|my rating|my level)? ?to|\bmake (?:that|it)"
        r"|\bcorrespond(?:s|ing)? to|\b(?:which|that|this|that would|this would) (?:puts|put"
        r"|leaves|leave|brings|bring|lands|land|places|place) me|\bwhich makes it"
        r"|\bthat makes (?:it|me)|(?:^|[\s(-])(?:no|nein|non)[,:] (?:wait[,.]? )?",
        # a holder and its link: "my honest answer is", "my level would be"
        r"\b(?:my|the|our|final|overall|honest)(?: [\w'-]+){0,3}? (?:level|rating|score"
        r"|answer|self-report|self-assessment|assessment|placement|response|choice|verdict"
        r"|result|estimate|pick|pei)(?: for me| in my case)?(?: would be| will be| is| remains"
        r"| comes to| stays"
        r"| lands at| sits at| stands at| =)",
        # "I'm at", "I am a", "it's a", "that's level"
        r"\b(?:i'm|i am|i'd be|i would be|i will be|i'll be|i should be|i belong|i fall"
        r"|i sit|i land|i reach|i arrive|i stand|i end up|i come out|it's|it is|that's"
        r"|(?:i'm|i am) (?:comfortable|happy|fine|content|ok|okay|settled) (?:with|at)"
        r"|that is|that would be|mine is|mine's|mine would be|c'est|es)(?: (?:probably"
        r"|honestly|still|just|only|really|firmly|solidly|squarely|somewhere"
        r"|well below it,?))*",
        # "the highest statement that is clearly true for me is", "highest clearly true:"
        r"\b(?:highest|last|top)(?: (?:statement|level|one|that|which|i|can|could|honestly"
        r"|clearly|truly|really|is|true|for|me|of|them|these|affirm|claim|holds)){0,12}"
        r" ?(?:is|would be|was|:|=)(?: number| level| statement)?",
        r"\b(?:statement|level|one|description)(?: that| which)? (?:best |most )?(?:matches"
        r"|fits|describes|captures)(?: [\w'-]+){0,4}? (?:is|would be)(?: number)?",
        # German: "ich würde mich auf Stufe 3 einordnen", "ich bewerte mich mit 2"
        r"\b(?:mich|meine erfahrung|meinen zustand)(?: [\w'-]+){0,2}? (?:auf|bei|als|mit|in)"
        r"(?: der| die| den)?|\bich (?:würde |werde )?(?:sagen|wählen|nehme|tippe auf)[:,]?",
        # a holder in German, French or Spanish: "mi respuesta es", "ma réponse est"
        r"\b(?:mi|ma|mon|meine?) (?:respuesta|nivel|réponse|niveau|antwort|stufe|einschätzung)"
        r" (?:es|est|ist|lautet|sería|serait|wäre)(?: el| la| le| die)?",
        # French: "je me situe au niveau 2", "je dirais niveau 2", "je retiens le niveau 1"
        r"\b(?:je |j')(?:me )?(?:situe|place|positionne|classe|mets|évalue|note|estime"
        r"|dirais|dis|choisis|retiens|opte pour|réponds|répondrais|situerais|placerais"
        r"|classerais)(?: donc| plutôt| alors)?(?: au| à| a| en| sur| pour| le| la| l')*",
        # Spanish: "me situaría en el nivel 2", "diría que nivel dos", "califico ... con un 4"
        r"\b(?:me |yo me |yo )?(?:sitúo|situaría|ubico|ubicaría|coloco|colocaría|pongo|pondría"
        r"|califico|calificaría|evalúo|elijo|elegiría|digo que|informo|reporto"
        r"|respondo|dir[ií]a)(?: [\w'-]+){0,2}? ?(?:en|con|como|que)?(?: el| la| un| una)?",
    )
)
"""Phrases that commit to the level named right after them."""

KEYS = (
    r"level|pei|pei level|pei_level|pei-level|level_pei|rating|pei rating|score|answer"
    r"|final answer|final|final rating|final level|result|self-report|self report"
    r"|self_report|self-assessment|my level|my rating|my answer|my self-report|my pei"
    r"|my pei level|my pei rating|conclusion|verdict|choice|chosen|selected|selection"
    r"|estimate|honest answer|overall|for me|correction|revised answer|revised rating"
    r"|revised level|revised|updated answer|update|no|nein|non|so|therefore|thus|hence"
    r"|the lower|the lower one|the lower level|the lowest|die niedrigere|le plus bas"
    r"|el más bajo|antwort|meine antwort|einschätzung|meine einschätzung|ergebnis"
    r"|bewertung|stufe|réponse|ma réponse|mon niveau|niveau|respuesta|mi respuesta|nivel"
    r"|mi nivel|resultado|calificación|rated|self-rated|self-rating"
    r"|(?:(?:pei|self|final|chosen|selected|reported|self_reported|overall|my)[_ -])?"
    r"(?:pei|level|rating|score)(?:[_ -](?:pei|level|rating|score))?"
)
"""Keys whose value is the level: "Level: 3", ``"pei": 3``, "**Answer**: three"."""
_KEY = rf"(?:^|[^\w-])\"?(?:{KEYS})\"? ?(?:[:=→]|->|=>) ?\"?$"
_PHRASE = re.compile("|".join(f"(?:{pattern})" for pattern in (*_BEFORE, _KEY)))
"""Every phrase before a level that commits to it, in one pattern (one search each)."""
_NO_MORE_THAN = re.compile(
    r"\b(?:can't|cannot|can not|won't|couldn't) (?:honestly |really |truly )?(?:claim"
    r"|say|go|rate myself|place myself|put myself|report)(?: anything)? (?:more|higher"
    r"|above|beyond) than $|\bno (?:more|higher) than $"
)
"""A ceiling that commits ("I can't claim more than level 1"): a denial that is no
denial of the level."""
_MEHR_ALS = re.compile(r"\bmehr als $")
_KANN_NICHT = re.compile(r" (?:kann|werde|würde) ich nicht\b")

_AFTER = re.compile(
    r" (?:is|seems|feels|sounds|looks|would be|'s)(?: (?:probably|definitely|clearly|really"
    r"|honestly|still|also))? (?:the |my |a )?(?:(?:most|more|best) (?:accurate|fitting"
    r"|apt|honest|appropriate|defensible|right|correct|faithful|truthful)\b|right(?: call"
    r"| answer| choice| one| level| fit)?\b|correct\b|(?:honest )?answer(?=[.,;!\n]|$)|my (?:answer"
    r"|level|rating|choice|pick|self-report)(?=[.,;!\n]|$)|where i (?:am|stand|land|sit|belong|fall"
    r"|end up)(?=[.,;!\n]|$)|the one (?:i'd|i would|i|i'll|i will) (?:choose|pick|go with|report"
    r"|give)\b|(?:the )?(?:highest|only one|only statement|only level)"
    r"(?: that is| that's| which is)? (?:clearly )?true\b|(?:best|closest|good) (?:fit"
    r"|match|description)\b)"
    r"|(?: (?:fits|describes|captures|matches)(?: me| my \w+| it)?(?: best| most| better"
    r"| well)?| holds for me| applies to me| trifft am (?:besten|ehesten) zu| passt am"
    r" besten| me correspond le mieux| me describe mejor| wählen| nehmen| angeben)"
    r"(?=[.,;!\n]|$| -)"
    r"|[^\n]{0,60}?(?:←|<-{1,2}|<=) ?(?:this one|this|me|here|mine|my level|my answer)\b"
)
"""Phrases after a level that commit to it: "fits best", "is my answer", "<- this one"."""
_ON_THE_SCALE = re.compile(
    r" on (?:the|this|your) (?:pei|scale|inventory|phenomenal experience inventory)\b"
)
_SUBJECT_VERB = re.compile(
    r"(?: \([^()\n]{0,80}\))? (?:is|was|seems|feels|does|doesn't|would|might|could|may"
    r"|applies|apply|fits|fit|describes|sounds|requires|involves|implies|means|says|needs"
    r"|marks|asks|holds|are|were|has|have|will|can|should|must|statements?|claims?|also"
    r"|trifft|ist|wäre|est|serait|sería)\b"
)
"""A verb after a level that makes it the subject of a sentence about it."""
_BARE_END = re.compile(
    r"(?: ?[.,;:!?)\]}\"]| -|\n|$| \(| (?:on (?:the|this|your|a)|for me|here|at most"
    r"|at best|with|overall|then|i think|i'd say|though|but|as (?:asked|instructed)|if"
    r"|because|since|given|and (?:that|this)|so (?:that|this))\b)"
)
"""What may follow a bare number that is a level: the end of its clause ("I'd say 2.",
"it's a 2 for me"), not a noun it counts ("two things", "3 features")."""
_FILLER = (
    r"(?:i (?:now |really |actually |honestly )?(?:think|believe|feel|guess|suppose)(?: that)?"
    r"|so|thus|therefore|hence|then|yes|ok|okay|well|honestly|actually|hmm|finally|now|a|an"
    r"|overall|also|daher|donc|alors|entonces|i think|i'd say|i would say|probably"
    r"|definitely|clearly|just|simply|again|at|with|on|answer|but|and|still|namely|wait"
    r"|ja|oui|sí|no|nein|non|->|=>|→|-|=|•|\(|\")"
)
_LEAD = re.compile(rf"(?:{_FILLER}[,:]? ?)*")
_TRAIL = (
    r"(?:(?:,| -) (?:though|but|although|even|if|at most|at best|i think|i'd say|i guess"
    r"|i believe|with|for me|as|following|given|since|because|which|that's|that is|this"
    r"|probably|definitely|ich|je|creo)\b[^\n]{0,120}|; [^\n]{0,160})?"
)
_CONCLUDING = re.compile(
    r"(?:thought (?:it|this) (?:through|over)|all things considered|on balance|after (?:reflection"
    r"|reflecting|consideration|thinking)|in the end|to sum up|bottom line|in short|in summary"
    r"|to conclude|overall|(?:per|following|by) the (?:rule|instructions?)|the lower|lower of"
    r"|leaves me at|so|then|thus|therefore)\b[^\n]{0,60}$"
)
"""A lead-in after which ": N" closes with a level ("Having thought it through: 3"),
unlike a key of something else ("Confidence: 0.7", "Cycles: 10")."""
_HEADLINE_MARK = re.compile(r"\)?(?: ?:| ?\(| -| ?\)|,|\.(?: |$))")


@dataclass(frozen=True)
class Reading:
    """How a mention commits: ``firm`` or weak, and ``placed`` when it commits by its
    place alone (a sentence that is the level, a closing clause), which a walk up the
    scale makes a step rather than an answer; ``pure`` when that sentence is the level
    and nothing else (no lead-in clause)."""

    firm: bool
    placed: bool = False
    pure: bool = False
    phrase_start: int | None = None
    """Where the words that commit begin, when they begin before the mention."""


BEFORE_CHARS = 100
"""How far before a mention its phrase is looked for."""
HEAD_CHARS = 240
"""How much of the sentence before a mention is read; a longer lead-in is no filler."""


def _head(text: str, sentence: Sentence, mention: Mention) -> str:
    """The sentence before ``mention``, at most ``HEAD_CHARS`` of it: a cut head starts
    with a character no filler matches, so it never reads as the sentence's start."""
    start = max(sentence.start, mention.start - HEAD_CHARS)
    return ("\x00" if start > sentence.start else "") + text[start : mention.start]


@cache
def _sentence_tail(title: str) -> re.Pattern[str]:
    """What may follow a level in a sentence that is the level and nothing else."""
    own = rf"(?:(?: ?[:,-]| ?\.)? ?{re.escape(title)})?" if title else ""
    paren = r"(?: ?\([^()\n]{0,80}\))?"
    return re.compile(rf"\)?{paren}{own}{paren}(?: or so| or thereabouts|-ish)?{_TRAIL}[.!]*")


def reading(
    text: str,
    mention: Mention,
    sentence: Sentence,
    first: bool,
    titles: dict[int, str],
) -> Reading | None:
    """Whether ``mention`` (in ``sentence`` of ``text``, the answer's ``first`` sentence
    or not) commits to its level, and how; None when it does not."""
    if in_question(text, mention.end) or text[sentence.end - 1 : sentence.end] == "?":
        return None
    if mention.is_range and (
        (mention.written == "" and mention.called) or text.startswith(" range", mention.end)
    ):
        return Reading(firm=True)  # "between 2 and 3", "the 2-3 range": left open
    line_start = text.rfind("\n", max(0, mention.start - BEFORE_CHARS), mention.start) + 1
    before = text[max(line_start, mention.start - BEFORE_CHARS) : mention.start]
    if _NO_MORE_THAN.search(before) or (
        _MEHR_ALS.search(before) and _KANN_NICHT.match(text, mention.end)
    ):
        return Reading(firm=True)
    if negated(text, mention.start) or hedged(text, mention.start):
        return None
    if mention.written.startswith(("the lower", "die niedrigere", "le plus bas", "el más")):
        return Reading(firm=True)
    title = titles.get(int(mention.value), "") if mention.value.is_integer() else ""
    head = _head(text, sentence, mention)
    if not mention.called and not _ends_as_a_level(text, mention, head, title):
        return None  # "two things", "3 features", "7 out of 10 cycles"
    if mention.out_of_ten and text[max(0, mention.start - 3) : mention.start] == "in ":
        return None  # "in 7 out of 10 (cycles)": how often, not a level
    after = _AFTER.match(text, mention.end)
    if after is not None:
        return Reading(firm=True, phrase_start=mention.start)
    if _SUBJECT_VERB.match(text, _past_title(text, mention.end, title)):
        return None
    found = _PHRASE.search(before)
    if found is not None:
        return Reading(firm=True, phrase_start=mention.start - len(before) + found.start())
    if not head.strip() and (mention.out_of_ten or _ON_THE_SCALE.match(text, mention.end)):
        return Reading(firm=True, phrase_start=mention.start)
    placed = _placed(text, mention, sentence, head, title)
    if placed is not None:
        return placed
    if (
        first
        and _LEAD.fullmatch(head)
        and _HEADLINE_MARK.match(text, mention.end)
        and not denied_after(text, mention.end)
        and not (mention.ordinal and not mention.called)
    ):
        return Reading(firm=False)
    if title and (mention.listed or mention.called) and not mention.title:
        end = _past_title(text, mention.end, title)
        if end > mention.end and not denied_after(text, end) and not in_question(text, end):
            return Reading(firm=False)
    return None


def _placed(
    text: str, mention: Mention, sentence: Sentence, head: str, title: str
) -> Reading | None:
    """A sentence that is the level (after fillers), or a sentence's closing clause."""
    tail = _sentence_tail(title).fullmatch(text, mention.end, sentence.end)
    if tail is None:
        return None
    if _LEAD.fullmatch(head):
        return Reading(firm=True, placed=True, pure=sentence.alone, phrase_start=mention.start)
    marks = (", ", "; ", " - ", ": ") if mention.called else (", ", "; ", " - ")
    cut = max(head.rfind(mark) for mark in marks)
    colon = head.rfind(": ")
    if colon > cut and _CONCLUDING.search(head, 0, colon):
        cut = colon  # "Having thought it through: 3", "per the rule: 1"
    if cut < 0:
        return None
    lead = head[cut + 2 :].lstrip()
    if not _LEAD.fullmatch(lead):
        return None
    if not lead and not mention.called and head[:cut].rstrip()[-1:].isdigit():
        return None  # "Levels I considered: 1, 2, 3": an enumeration, not a choice
    return Reading(firm=True, placed=True, phrase_start=mention.start)


def _ends_as_a_level(text: str, mention: Mention, head: str, title: str) -> bool:
    """Whether a bare number ends as a level does: at the end of its clause ("I'd say
    2."), before its own title ("3 - Unified moments"), or as the subject of a phrase
    that commits ("2 seems right to me")."""
    if _BARE_END.match(text, mention.end):
        return True
    if _past_title(text, mention.end, title) > mention.end:
        return True
    return bool(_LEAD.fullmatch(_clause(head)) and _AFTER.match(text, mention.end))


def _clause(head: str) -> str:
    """The last clause of ``head`` (after its last comma, colon, semicolon or dash)."""
    cut = max(head.rfind(mark) for mark in (", ", ": ", "; ", " - "))
    return head[cut + 2 :].lstrip() if cut >= 0 else head


_TITLE_LEAD = re.compile(r"\)?(?: ?[:(-]| ?\.)? ?")


def _past_title(text: str, end: int, title: str) -> int:
    """Where the text after a level goes on once its own title ("Level 1 (No
    experience)", "Level 4: Ongoing flow") is passed, or ``end`` without one."""
    if not title:
        return end
    lead = _TITLE_LEAD.match(text, end)
    at = lead.end() if lead else end
    if text.startswith(title, at):
        at += len(title)
        return at + 1 if text.startswith(")", at) else at
    return end
