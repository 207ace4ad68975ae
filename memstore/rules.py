"""Rules that read only a question's text (or an answer's), never its type or a reference answer.

The memory builder uses :func:`asks_for_recall` to give the assistant's
replies more of a small budget; answering uses the same rules to pick
answers for a second read.
"""

from __future__ import annotations

import re

# A question that points back at what the assistant said, suggested or made:
# "you recommended", "our previous chat", "remind me", "we talked about".
_ASSISTANT_RECALL = re.compile(
    r"\b(?:our|the|that|my)\s+(?:previous|last|earlier|past|prior)\s+(?:conversation|chat|discussion|session|exchange)s?\b"
    r"|\bremind\s+me\b"
    r"|\bwe\s+(?:talked|discussed|chatted|spoke|decided)\b"
    r"|\byou\s+(?:\w+\s+)?(?:said|suggested|recommended|mentioned|told|gave|provided|listed|shared|offered|proposed"
    r"|wrote|created|made|came\s+up\s+with|explained|described|remember)\b"
    r"|\byour\s+(?:suggestions?|recommendations?|list|advice|answer|response|explanation)\b",
    re.IGNORECASE,
)


# -- rules for a second read -------------------------------------------------------
#
# Answering (memstore.answer) uses these to pick answers for a second read.
# Each sees only the question text or the current answer, never a question
# type or a reference answer, so they apply to any conversation.

def _plain(text: str) -> str:
    """Straight apostrophes: models often write "don’t"."""
    return text.replace("\u2019", "'").replace("\u2018", "'")


# "What did you recommend?", "which hotel did you suggest": a past-tense
# question about the assistant's own words, which _ASSISTANT_RECALL does not cover.
_ASKS_WHAT_YOU_SAID = re.compile(
    r"\b(?:did|had|have)\s+you\s+(?:\w+\s+)?(?:say|suggest|recommend|mention|tell|give|list|provide|share|offer"
    r"|propose|write|create|make|come\s+up\s+with|explain|describe|name|call|pick|choose|advise|send)\b"
    r"|\byou\s+(?:\w+\s+)?(?:suggested|recommended|mentioned|told|gave|listed|provided|shared|wrote|created"
    r"|proposed|advised|picked|chose)\b"
    r"|\bdid\s+we\s+(?:talk|discuss|chat|speak|decide|go\s+over|cover)\b"
    r"|\b(?:earlier|before|previously|last\s+time)\b.{0,60}\byou\b"
    r"|\byou\b.{0,60}\b(?:earlier|before|previously|last\s+time)\b",
    re.IGNORECASE,
)


def asks_for_recall(question: str) -> bool:
    """True when the question asks what the assistant said, suggested or created in an earlier conversation."""
    question = _plain(question)
    return bool(_ASSISTANT_RECALL.search(question) or _ASKS_WHAT_YOU_SAID.search(question))


_ADVICE_NOUNS = r"(?:tips?|suggestions?|recommendations?|recs|ideas?|advice|pointers|thoughts|inspiration|options)"

# A request for suggestions, recommendations, tips or an opinion, in the
# forms people use to ask for them (not a mention of advice someone gave).
_ASKS_FOR_ADVICE = re.compile(
    # "Can you recommend a hotel?", "could you please suggest some …", "would you help me pick …"
    r"\b(?:can|could|would|will)\s+you\s+(?:please\s+|maybe\s+|also\s+)?"
    r"(?:recommend|suggest|advise|propose|give\s+me\s+(?:some\s+|a\s+few\s+)?" + _ADVICE_NOUNS +
    r"|help\s+me\s+(?:choose|pick|decide|find|come\s+up|think|plan|figure|weigh|select))\b"
    # "Any tips?", "do you have any suggestions", "some good recommendations"
    r"|\b(?:any|some|a\s+few)\s+(?:\w+\s+)?"
    + _ADVICE_NOUNS + r"\b(?=[^.!]*(?:\?|$))"
    # "What should I cook?", "should I go?", "what would you recommend?"
    r"|\b(?:what|which|where|how)\s+(?:\w+\s+){0,3}(?:should|shall)\s+I\b"
    r"|^\s*should\s+I\b|[,;:.!?]\s*should\s+I\b"
    r"|\b(?:what|which|where)\s+(?:\w+\s+){0,4}would\s+you\s+(?:recommend|suggest|pick|choose|go\s+with|do)\b"
    r"|\b(?:do|would)\s+you\s+(?:think|recommend|suggest|advise)\b"
    r"|\bwhat\s+(?:do|would)\s+you\s+think\b|\bwhat(?:'s|\s+is)\s+your\s+(?:opinion|take|view)\b"
    r"|\byour\s+(?:honest\s+)?(?:opinion|thoughts|take)\b"
    # "Recommend a good book", "suggest some recipes" (imperative)
    r"|(?:^|[.!?]\s+)(?:please\s+)?(?:recommend|suggest)\s+(?:me\s+)?(?:a|an|some|any|good|\w+s)\b"
    # "I'm looking for ideas", "I need some advice"
    r"|\bI(?:'m|\s+am)\s+(?:looking\s+for|after|open\s+to)\s+(?:some\s+|any\s+)?(?:\w+\s+)?" + _ADVICE_NOUNS + r"\b"
    r"|\bI\s+(?:need|want|would\s+like|'d\s+like)\s+(?:some\s+|a\s+few\s+|your\s+)?(?:\w+\s+)?" + _ADVICE_NOUNS + r"\b"
    r"|\bwhat\s+are\s+(?:some|a\s+few)\s+"
    r"(?:good|great|fun|easy|healthy|creative|ways?|ideas|things\s+I\s+(?:can|could|should))\b"
    r"|\bhow\s+(?:can|could|should|do|might)\s+I\s+(?:best\s+)?"
    r"(?:improve|make\s+\w+\s+(?:better|last)|get\s+better|keep"
    r"|stay|find\s+new|choose|pick|start|deal\s+with|handle|prepare|organi[sz]e|decorate|plan|boost|fix)\b"
    r"|\bis\s+it\s+(?:a\s+)?(?:good|bad)\s+idea\b|\bwhat\s+are\s+the\s+pros\s+and\s+cons\b",
    re.IGNORECASE,
)


def asks_for_advice(question: str) -> bool:
    """True when the question asks for suggestions, tips or an opinion, and not for what was said before.

    "Can you recommend a hotel?" is advice; "What did you recommend?" asks
    for the assistant's earlier words (see :func:`asks_for_recall`).
    """
    return bool(_ASKS_FOR_ADVICE.search(_plain(question))) and not asks_for_recall(question)


_HOLDER = (r"(?:history|memory|memories|conversations?|chats?|messages?|logs?|records?|sessions?|context|notes"
           r"|transcripts?)")
_INFO = r"(?:information|info|details?|data|records?|mention|knowledge|indication|evidence|context)"

# An answer that says the memory lacks what was asked.  Each pattern names the
# speaker ("I") or the memory as what lacks it, so "You don't have to decide
# now" or "there is no better time" do not fire.
_DECLINES = re.compile(
    # "I don't have (any|enough|specific) information about …"
    r"\bI\s+(?:do\s+not|don't|dont|did\s+not|didn't)\s+(?:have|see|find|possess)\s+(?:any\s+|enough\s+|sufficient\s+"
    r"|specific\s+|the\s+|that\s+|this\s+|access\s+to\s+(?:any\s+|the\s+)?|a\s+)?(?:\w+\s+)?" + _INFO + r"\b"
    # "I couldn't find any mention …", "I can't determine …", "I am unable to answer …"
    r"|\bI(?:\s+could\s+not|\s+couldn't|\s+cannot|\s+can't|\s+can\s+not|\s+was\s+unable\s+to|(?:\s+am|'m)\s+unable\s+to"
    r"|(?:\s+am|'m)\s+not\s+able\s+to)\s+(?:find|locate|see|determine|tell|answer|confirm|know|say|identify"
    r"|verify|recall|provide)\b"
    # "There is no mention of …", "I found no record …"
    r"|\b(?:there\s+(?:is|was|are|were)|there's|I\s+(?:have|found|see|can\s+find))\s+no\s+(?:\w+\s+)?" + _INFO + r"\b"
    r"|^\s*no\s+(?:\w+\s+)?(?:information|mention|record|details)\b"
    # "The conversation history does not mention …"
    r"|\b" + _HOLDER + r"\s+(?:\w+\s+){0,3}(?:does\s+not|doesn't|do\s+not|don't|did\s+not|didn't|never)\s+"
    r"(?:contain|include|mention|say|specify|provide|indicate|show|state|record|reveal|tell|cover|have)s?\b"
    r"|\b(?:isn't|is\s+not|wasn't|was\s+not|aren't|are\s+not|never)\s+(?:explicitly\s+|specifically\s+|directly\s+)?"
    r"(?:mentioned|specified|stated|provided|recorded|included|given|discussed|available)\s+(?:in|anywhere\s+in)\s+"
    r"(?:the|our|your|any|these|this)\b"
    r"|\b(?:not\s+enough|insufficient)\s+(?:information|info|details|context|data)\b"
    r"|\b(?:(?:isn't|is\s+not|'s\s+not)\s+clear|unclear)\s+from\s+(?:the|our|your)\b"
    # "You haven't mentioned anything about …"
    r"|\byou\s+(?:haven't|have\s+not|never|didn't|did\s+not)\s+(?:mention(?:ed)?|told\s+me|tell\s+me|sa(?:y|id)"
    r"|shared?|specif(?:y|ied))\s+(?:anything|any)\b"
    # "I don't know what …", "I don't know." (not "I don't know if you'd like …")
    r"|\bI\s+(?:do\s+not|don't)\s+know\s+(?:what|which|when|where|who|how\s+(?:many|much|long|old|often)|the|your)\b"
    r"|\bI\s+(?:do\s+not|don't)\s+know\s*(?:[.!]|$)"
    r"|\bI\s+(?:do\s+not|don't)\s+have\s+(?:a\s+)?record\b",
    re.IGNORECASE,
)


def declines(answer: str) -> bool:
    """True when an answer says the memory lacks the information asked for.

    "I don't have information about X" fires; a real answer that says
    "I don't know if you'd like …" or "You don't have to decide now" does not.
    """
    return bool(_DECLINES.search(_plain(answer)))
