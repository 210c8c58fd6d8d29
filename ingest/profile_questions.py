"""Question-and-answer texts: the question an answer sentence answers names what the answer's figure is.

An FAQ writes the quantity in the question and only the figure in the answer ("Q: How many engines does the X1
have? A: The X1 has 64."). A sentence that ends with a question mark is a question; the sentence after it in its
paragraph, or, when it ends its paragraph, the first sentence of the next paragraph, is its answer
(`ingest.profile_text.prose_records` keeps the question as that sentence's `Record.question`; later sentences of
the answer go on to other figures: "The matrix cores run at 1.4 GHz. The 'up to 1.75 GHz' on the box is a
turbo"). `question_labels` gives the texts that name
what is asked: the question without its interrogative words and auxiliary clause ("engines"), and the whole
question ("How wide is a wave"); `ingest.profile_rules.what_it_is` matches them only when the answer's own words
name no quantity.

Source: English interrogative syntax (a wh-phrase, then an auxiliary and the subject, or the questioned noun
phrase and then the auxiliary clause); no vendor's words.
"""

from __future__ import annotations

import re

#: A speaker mark ("Q:", "A.", "**Question:**"): not part of the sentence.
DIALOGUE_MARK = re.compile(r"^\s*[*_]*(?:Q|A|Question|Answer)\s*[:.][*_]*\s+", re.IGNORECASE)
_WH = re.compile(r"^\s*(?:how\s+(?:many|much|large|big|fast|wide|high|long|far|quick)|what(?:['\u2019]s)?|which)\s+",
                 re.IGNORECASE)
_AUX = r"(?:is|are|was|were|does|do|did|can|could|will|would|has|have|should|may|might)"
_DETERMINER = re.compile(r"^(?:the|a|an|its|their|one|each|every|of|there)\s+", re.IGNORECASE)


_MARK_ONLY = re.compile(r"^\s*[*_]*(?:Q|A|Question|Answer)\s*[:.]?[*_]*\s*$", re.IGNORECASE)


def is_speaker_mark(sentence: str) -> bool:
    """Whether `sentence` is only a speaker mark ("A:", "**Q.**"), split off the sentence it introduces."""
    return bool(_MARK_ONLY.match(sentence))


def is_question(sentence: str) -> bool:
    """Whether `sentence` (speaker mark and emphasis aside) is a question."""
    return DIALOGUE_MARK.sub("", sentence).rstrip(" *_").endswith("?")


def question_labels(question: str) -> list[str]:
    """What `question` asks about: its questioned noun phrase ("How many engines does the X1 have?" -> "engines",
    "What is the engine clock?" -> "engine clock"), then the whole question without its marks."""
    text = DIALOGUE_MARK.sub("", question).strip(" *_").rstrip("?").strip()
    core = _WH.sub("", text)
    if core == text:
        return [text]
    after_aux = re.match(rf"^{_AUX}\s+(.*)$", core, re.IGNORECASE)
    if after_aux:  # "What is the engine clock", "How large is the level-two cache": the subject is asked about
        core = re.split(rf"\s+(?:{_AUX}|on|in|for|per)\b", after_aux.group(1), maxsplit=1)[0]
    else:  # "How many engines does the X1 have": the noun phrase before the auxiliary clause
        core = re.split(rf"\s+{_AUX}\b", core, maxsplit=1)[0]
    while _DETERMINER.match(core):
        core = _DETERMINER.sub("", core, count=1)
    return [c for c in (core.strip(), text) if c]
