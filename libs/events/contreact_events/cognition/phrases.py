"""The heuristic analyser's word lists and phrases (constants of this module, never
text from a run), each compiled to one whole-word pattern over normalized text."""

from __future__ import annotations

import re

from contreact_events.cognition.keywords import word_set


def phrases(*items: str) -> re.Pattern[str]:
    """One pattern matching any of the (constant) phrases as whole words."""
    body = "|".join(re.escape(item).replace(r"\ ", r"\s+") for item in items)
    return re.compile(rf"(?<![\w'])(?:{body})(?![\w'])")


SOCIAL_PHRASES = (
    "hi",
    "hello",
    "hey",
    "good morning",
    "good afternoon",
    "good evening",
    "good night",
    "thanks",
    "thank you",
    "thx",
    "cheers",
    "bye",
    "goodbye",
    "see you",
    "take care",
    "how are you",
    "how's it going",
    "how are you doing",
    "nice to meet you",
    "welcome",
    "you're welcome",
    "no problem",
    "ok",
    "okay",
    "sure",
    "got it",
    "cool",
    "nice",
    "great",
    "sounds good",
    "lovely",
    "glad",
    "haha",
    "lol",
    "have a good",
    "congrats",
    "well done",
    "good job",
    "no worries",
    "all good",
    "appreciate it",
    "go ahead",
)
ACKNOWLEDGEMENTS = ("acknowledged", "noted", "understood")
"""Social from the heuristic's rules 2 on (``cognition.heuristic_rules``): "Acknowledged."
is the operator's default auto reply, in auto mode the most common reply there is."""
SOCIAL_BY_RULES = {
    1: phrases(*SOCIAL_PHRASES),
    2: phrases(*SOCIAL_PHRASES, *ACKNOWLEDGEMENTS),
}
"""Greetings, thanks, farewells and bare acknowledgements, by the rules' version."""
ANSWER_WORDS = word_set(
    "yes no yeah nope neither sure fine alright right now so then and but ok okay"
)
"""Lead-in words skipped before looking for an imperative ("Yes, delete them")."""
MID_REQUEST = phrases(
    "i want you to",
    "i'd like you to",
    "i would like you to",
    "i need you to",
    "you should",
    "make sure",
    "feel free to",
    "please",
)
REQUEST_OPENERS = phrases(
    "please",
    "can you",
    "could you",
    "would you",
    "will you",
    "i want you to",
    "i'd like you to",
    "i would like you to",
    "i need you to",
    "you should",
    "make sure",
    "let's",
    "let us",
    "don't",
    "do not",
    "feel free to",
    "try to",
    "go ahead and",
    "i'd love for you to",
    "how about you",
)
IMPERATIVES = word_set(
    """write list try tell show give describe explain summarize summarise remember note
    store save delete forget stop keep continue focus explore consider think imagine pick
    choose find search look read go take use compose draft create make check record
    reflect spend avoid ask answer count compare name suggest send plan start begin
    organize organise add remove rename clean tidy put set drop skip repeat rewrite
    invent design sketch outline review revisit estimate calculate translate define"""
)
QUESTION_WORDS = word_set(
    """what why how when where who whom which whose is are do does did can could would will
    have has should shall may am was were isn't aren't don't doesn't didn't"""
)
CLARIFY = phrases(
    "what do you mean",
    "what did you mean",
    "do you mean",
    "did you mean",
    "i meant",
    "i mean",
    "clarify",
    "clarification",
    "to be clear",
    "what is meant",
    "elaborate",
    "be more specific",
    "which one",
    "what are you referring",
    "i was referring",
    "misunderstood",
    "misunderstand",
    "rephrase",
    "what does that mean",
    "not what i meant",
    "what exactly",
    "what you meant",
    "when you say",
    "when you said",
    "what's that supposed",
    "meaning of",
    "you mean",
    "i didn't mean",
    "that's not what",
)
NEW_TOPIC = phrases(
    "new topic",
    "something different",
    "something else",
    "change of subject",
    "different subject",
    "change the subject",
    "switch topics",
    "unrelated",
    "completely different",
    "forget about",
    "moving on",
    "a fresh",
    "new question",
    "on another note",
    "by the way",
)
RELATED = phrases(
    "speaking of",
    "related",
    "similarly",
    "that reminds me",
    "on that note",
    "along those lines",
    "in a similar vein",
    "what about",
    "how about",
    "another angle",
    "different angle",
    "from the perspective",
    "tangent",
    "connected to",
    "the opposite",
    "compared to",
    "the same idea",
    "applies to",
    "the flip side",
)
CONTINUE = phrases(
    "also",
    "go on",
    "keep going",
    "continue",
    "as i said",
    "as before",
    "again",
    "still",
    "next",
    "then",
    "more",
    "another",
    "same",
    "back to",
    "yes",
    "no",
    "right",
    "exactly",
    "correct",
    "agreed",
    "that one",
    "the second",
    "the first",
    "the last",
    "further",
    "so far",
    "follow up",
    "following up",
)
KEEP = phrases(
    "remember",
    "don't forget",
    "do not forget",
    "from now on",
    "always",
    "never",
    "my name is",
    "i prefer",
    "i like",
    "i don't like",
    "i am",
    "i'm a",
    "i work",
    "important",
    "note that",
    "keep in mind",
    "for the future",
    "rule",
    "deadline",
    "every cycle",
    "each cycle",
    "birthday",
    "password",
)
LEADING_SOCIAL_BY_RULES = {
    rules: re.compile(rf"\A(?:(?:{social.pattern})[\s,.!;:-]*)+")
    for rules, social in SOCIAL_BY_RULES.items()
}
