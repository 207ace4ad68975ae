"""Rules that read only a question's text (or an answer's), never its type or a reference answer.

The memory builder uses :func:`asks_about_assistant` to give the assistant's
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


def asks_about_assistant(question: str) -> bool:
    """True when the question asks about something the assistant said, suggested or created before."""
    return bool(_ASSISTANT_RECALL.search(question))
