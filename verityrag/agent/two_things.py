"""Questions about two named things, decided by each thing's own document: yes/no questions ("Are
both Kings of Leon and The New Pornographers American rock bands?", "Were Scott Derrickson and Ed
Wood of the same nationality?") and which of the two something is ("Which magazine is published in
the United Kingdom, Bella or Al Jamila?").

Each thing has a document of its own (its title or first sentence names it). What is asked is one
of:

- **both**: whether both are something. A thing is what the question says when its document holds
  every word of it (stemmed: "bands" is "band"); a document that lacks words is no evidence (it
  may say "novelist" for "writer"), but one whose opening gives another nation than the one asked
  is: yes when both documents hold the words, no when one gives another nation.
- **same** (or **different**): whether they share a kind of value (a nationality or country, a
  US state, a plant family): each document's value (the first nation its opening gives, the
  states it names, "family X"); yes when they share one, no when both have values and share none.
- **which**: which of the two is something: the one whose document holds every word asked, when
  the other's does not.

A thing with no document is a missing hop; documents that do not decide are a refusal as not said.
A yes/no answer is "Yes" or "No", a "which" answer the thing's name; both cite each document's
sentence that decided it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from verityrag.agent.hops import name_in
from verityrag.text.sentences import sentence_spans
from verityrag.text.subjects import text_terms
from verityrag.types import Citation, CitedSentence, Hit, ShortAnswer

#: How much of a document's opening says where a thing is from.
OPENING_CHARS = 300

_AUX = r"(?:are|were|is|was|do|does|did|have|has|can|could)"
# "Are [both] [the] [bands] A and B ...?": the things and what is asked of them after the verb; a
# lower-case word before the things says what they are ("the bands", "the magazines,").
_LEAD = re.compile(
    rf"^\s*(?i:{_AUX})\s+(?:(?i:both|either)\s+)?(?:(?i:the|a|an)\s+)?(?:[a-z][\w-]*,?\s+)?(?P<rest>.+?)\s*\??\s*$"
)
# "A and B, are P?"
_TAIL = re.compile(rf"^\s*(?P<rest>[^,]+?\s+and\s+[^,]+?),\s*(?P<aux>(?i:{_AUX}))\s+(?P<asked>.+?)\s*\??\s*$")
_AND = re.compile(r"\s+and\s+(?:(?:the|a|an)\s+)?", re.IGNORECASE)
_BOTH = re.compile(r"\s*,?\s*\bboth\b\s*", re.IGNORECASE)
# Words that may stand inside a name ("Kings of Leon", "Cão Fila de São Miguel").
_NAME_JOINERS = frozenset("of de da do du del la le van von der den di the and & y".split())
_SAME = re.compile(r"\b(?P<how>same|similar|different)\s+(?P<kind>[a-z]+)", re.IGNORECASE)
#: Words that say what is asked, not what is: left out of a "both" question's words.
_FILLER = text_terms(
    ["type types kind kinds form forms both known considered example examples one ones genus member members"]
)

# A nation's adjective, its country's names: "American" and "United States" are one value.
_NATIONS: dict[str, tuple[str, ...]] = {
    "american": ("united states", "u.s.", "usa"),
    "british": ("united kingdom", "uk", "britain"),
    "english": ("england",),
    "scottish": ("scotland",),
    "welsh": ("wales",),
    "irish": ("ireland",),
    "canadian": ("canada",),
    "australian": ("australia",),
    "new zealand": ("new zealand",),
    "french": ("france",),
    "german": ("germany",),
    "italian": ("italy",),
    "spanish": ("spain",),
    "portuguese": ("portugal",),
    "dutch": ("netherlands", "holland"),
    "belgian": ("belgium",),
    "swiss": ("switzerland",),
    "austrian": ("austria",),
    "swedish": ("sweden",),
    "norwegian": ("norway",),
    "danish": ("denmark",),
    "finnish": ("finland",),
    "icelandic": ("iceland",),
    "polish": ("poland",),
    "czech": ("czech republic", "czechia"),
    "hungarian": ("hungary",),
    "romanian": ("romania",),
    "greek": ("greece",),
    "turkish": ("turkey",),
    "russian": ("russia",),
    "ukrainian": ("ukraine",),
    "soviet": ("soviet union",),
    "chinese": ("china",),
    "japanese": ("japan",),
    "korean": ("korea",),
    "south korean": ("south korea",),
    "indian": ("india",),
    "pakistani": ("pakistan",),
    "bangladeshi": ("bangladesh",),
    "filipino": ("philippines",),
    "indonesian": ("indonesia",),
    "thai": ("thailand",),
    "vietnamese": ("vietnam",),
    "iranian": ("iran",),
    "israeli": ("israel",),
    "egyptian": ("egypt",),
    "nigerian": ("nigeria",),
    "south african": ("south africa",),
    "mexican": ("mexico",),
    "brazilian": ("brazil",),
    "argentine": ("argentina",),
    "argentinian": ("argentina",),
    "chilean": ("chile",),
    "colombian": ("colombia",),
    "peruvian": ("peru",),
    "cuban": ("cuba",),
    "venezuelan": ("venezuela",),
}
_UK_NATIONS = frozenset({"british", "english", "scottish", "welsh"})
_NATION_ALIASES = {alias: nation for nation, aliases in _NATIONS.items() for alias in (nation, *aliases)}
_NATION_RE = re.compile(
    r"\b(" + "|".join(re.escape(a) for a in sorted(_NATION_ALIASES, key=len, reverse=True)) + r")\b",
    re.IGNORECASE,
)
_US_STATES = (
    "Alabama|Alaska|Arizona|Arkansas|California|Colorado|Connecticut|Delaware|Florida|Georgia|Hawaii|"
    "Idaho|Illinois|Indiana|Iowa|Kansas|Kentucky|Louisiana|Maine|Maryland|Massachusetts|Michigan|"
    "Minnesota|Mississippi|Missouri|Montana|Nebraska|Nevada|New Hampshire|New Jersey|New Mexico|"
    "New York|North Carolina|North Dakota|Ohio|Oklahoma|Oregon|Pennsylvania|Rhode Island|"
    "South Carolina|South Dakota|Tennessee|Texas|Utah|Vermont|Virginia|Washington|West Virginia|"
    "Wisconsin|Wyoming"
).split("|")
_STATE_RE = re.compile(r"\b(" + "|".join(sorted(_US_STATES, key=len, reverse=True)) + r")\b")
_FAMILY_RE = re.compile(r"\bfamily\s+([A-Z][a-z]+)")
_KIND_WORDS = {"nation": "nationality or country", "state": "state", "family": "family"}
#: The kinds of value a "same" question can be decided on, and the words that ask for each.
SAME_KINDS: dict[str, str] = {
    "nationality": "nation",
    "nationalities": "nation",
    "country": "nation",
    "countries": "nation",
    "ethnicity": "nation",
    "ethnicities": "nation",
    "origin": "nation",
    "state": "state",
    "states": "state",
    "family": "family",
}


@dataclass(frozen=True, slots=True)
class TwoThings:
    """A question's two things and what it asks of them: ``asked`` is the words a "both" or
    "which" question asks a thing to be; ``same`` the kind of value a "same" question compares
    (``different`` when it asks whether they differ); ``which`` when it asks which of the two."""

    things: tuple[str, str]
    asked: str
    same: str | None = None
    different: bool = False
    which: bool = False

    def undecided(self) -> str:
        """Why the documents do not answer it, in words."""
        a, b = (repr(t) for t in self.things)
        if self.which:
            return f"the documents do not say which of {a} or {b} {self.asked}"
        if self.same is not None:
            return f"the documents do not give both {a}'s and {b}'s {_KIND_WORDS[self.same]}"
        return f"the documents do not say it of both {a} and {b}: {self.asked}"


def _name_prefix(words: Sequence[str]) -> int:
    """How many of ``words`` may be a name: capitalised words, digits and the words names hold."""
    n = 0
    for word in words:
        bare = word.strip(",\"'“”")
        if not bare or not (bare[0].isupper() or bare[0].isdigit() or bare.lower() in _NAME_JOINERS):
            break
        if n and bare.lower() in _NATION_ALIASES:  # "Kings of Leon American rock bands"
            break
        n += 1
    while n and words[n - 1].strip(",").lower() in _NAME_JOINERS:
        n -= 1
    return n


def _clean(name: str) -> str:
    return name.strip(" ,\"'“”")


# A thing's name holds no verb: "Is it true Marc Caro is a French cartoonist and ..." names none.
_STATEMENT = re.compile(r"\b(?:is|are|was|were|true|that)\b")


def _split(rest: str, has_document: Callable[[str], bool]) -> tuple[str, str, str] | None:
    """``rest`` ("A and B both P") as the two things and what is asked, the first ``and`` whose
    both sides are things with documents (a name may hold ``and``: "Gin and tonic and Paloma")."""
    for join in _AND.finditer(rest):
        a = _clean(rest[: join.start()])
        after = rest[join.end() :]
        both = _BOTH.search(after)
        if both is not None and both.start() > 0:
            options = [(after[: both.start()], after[both.end() :])]
        else:
            words = after.split()
            longest = _name_prefix(words)
            options = [(" ".join(words[:n]), " ".join(words[n:])) for n in range(longest, 0, -1)]
        for b, asked in options:
            b, asked = _clean(b), _BOTH.sub(" ", asked).strip(" ,")
            if a and b and asked and not _STATEMENT.search(a) and has_document(a) and has_document(b):
                return a, b, asked
    return None


def yes_no_question(question: str, has_document: Callable[[str], bool]) -> TwoThings | None:
    """The yes/no question about two things ``question`` asks (each a thing ``has_document``
    finds), or None when it asks none."""
    tail = _TAIL.match(question)
    if tail is not None:
        split = _split(tail.group("rest") + " both " + tail.group("asked"), has_document)
    else:
        lead = _LEAD.match(question)
        split = _split(lead.group("rest"), has_document) if lead is not None else None
    if split is None:
        return None
    a, b, asked = split
    same = _SAME.search(asked)
    if same is not None:
        kind = SAME_KINDS.get(same.group("kind").lower())
        if kind is None:
            return None
        return TwoThings((a, b), asked, kind, same.group("how").lower() == "different")
    return TwoThings((a, b), asked)


# "Which magazine is published in the United Kingdom, Bella or Al Jamila?": what is asked, then
# the two things after the comma (or a colon).
_WHICH = re.compile(
    r"^\s*(?i:which|who|what)\b(?P<asked>[^,:?]+?)\s*[,:]\s*(?:(?i:the)\s+)?(?P<a>[^,?]+?),?\s+or\s+"
    r"(?:(?i:the)\s+)?(?P<b>[^,?]+?)\s*\??\s*$"
)
# "Which musician, Edwyn Collins or Jimmie Ross, played the bass guitar?": the things first.
_WHICH_FIRST = re.compile(
    r"^\s*(?i:which|who|what)(?:\s+[\w-]+)?\s*,\s*(?:(?i:the)\s+)?(?P<a>[^,?]+?)\s+or\s+(?:(?i:the)\s+)?"
    r"(?P<b>[^,?]+?)\s*,\s*(?P<asked>[^?]+?)\s*\??\s*$"
)
# A "which" question that compares amounts (more, larger, higher) is not decided by words held.
_AMOUNT = re.compile(
    r"\b(?:more|most|less|least|fewer|larger|largest|bigger|biggest|smaller|smallest|higher|highest|"
    r"lower|lowest|longer|longest|shorter|taller|tallest|further|farther|closer|greater|better|worse)\b",
    re.IGNORECASE,
)
# The question's own words that say which is asked, not what it is: "which magazine is".
_WHICH_VERBS = re.compile(r"^\s*(?:\w+\s+)?(?:is|was|are|were|has|had|does|did)\b\s*", re.IGNORECASE)


def which_question(question: str, has_document: Callable[[str], bool]) -> TwoThings | None:
    """The "which of the two is P" question ``question`` asks (each thing one ``has_document``
    finds), or None when it asks none (or compares amounts)."""
    which = _WHICH.match(question) or _WHICH_FIRST.match(question)
    if which is None or _AMOUNT.search(which.group("asked")):
        return None
    a, b = _clean(which.group("a")), _clean(which.group("b"))
    asked = _WHICH_VERBS.sub("", which.group("asked").strip())
    if not a or not b or a.lower() == b.lower() or not asked:
        return None
    if not has_document(a) or not has_document(b):
        return None
    return TwoThings((a, b), asked, which=True)


def two_things_asked(question: str, has_document: Callable[[str], bool]) -> TwoThings | None:
    """The question about two things (each one ``has_document`` finds) ``question`` asks: a
    yes/no one, else a "which"; None when it asks neither."""
    return yes_no_question(question, has_document) or which_question(question, has_document)


def may_ask_two_things(question: str) -> bool:
    """Whether ``question`` has the shape of a question about two things (before any document is
    looked for): a yes/no question naming two things, or "which ..., A or B?"."""
    if _WHICH.match(question) or _WHICH_FIRST.match(question):
        return True
    shaped = _LEAD.match(question) or _TAIL.match(question)
    return shaped is not None and _AND.search(question) is not None


@dataclass(frozen=True, slots=True)
class Said:
    """What one thing's document says of what is asked: ``holds`` whether it is so (None: the
    document does not say), the values it gives (a "same" question), and the sentence that says."""

    thing: str
    hit: Hit
    holds: bool | None
    values: frozenset[str]
    sentence: CitedSentence


def _opening(text: str) -> str:
    return text[:OPENING_CHARS]


def nations(text: str, first: bool = False) -> frozenset[str]:
    """The nations ``text`` names (by adjective or country; only the first when ``first``), the
    UK's parts counting as British too."""
    found = [_NATION_ALIASES[m.group(1).lower()] for m in _NATION_RE.finditer(text)]
    named = set(found[:1] if first else found)
    return frozenset(named | ({"british"} if named & _UK_NATIONS else set()))


def values_of(kind: str, text: str) -> frozenset[str]:
    """The values of ``kind`` a document gives: nations in its opening, US states, plant families."""
    if kind == "nation":
        # An opening says where a thing is from first ("an Austrian-born American director" is
        # Austrian by birth; later nations are where it worked or moved).
        return nations(_opening(text), first=True)
    if kind == "state":
        return frozenset(m.group(1) for m in _STATE_RE.finditer(text))
    return frozenset(m.group(1) for m in _FAMILY_RE.finditer(text))


def _sentence(hit: Hit, words: frozenset[str]) -> CitedSentence:
    """The passage's sentence holding most of ``words`` (its first on a tie)."""
    chunk = hit.chunk
    spans = sentence_spans(chunk.text) or [(0, len(chunk.text))]
    start, end = max(spans, key=lambda s: (len(words & text_terms([chunk.text[s[0] : s[1]]])), -s[0]))
    return CitedSentence(
        chunk.text[start:end], (Citation(chunk.chunk_id, chunk.doc_id, chunk.title, start, end),)
    )


def said(question: TwoThings, thing: str, passages: Sequence[Hit]) -> Said:
    """What ``thing``'s document (``passages``, best first) says of what ``question`` asks."""
    text = " ".join(h.chunk.text for h in passages)
    if question.same is not None:
        values = values_of(question.same, text)
        words = text_terms(list(values))
        return Said(thing, passages[0], None, values, _sentence(passages[0], words))
    wanted = text_terms([question.asked]) - _FILLER
    holds: bool | None = True if wanted <= text_terms([text]) else None
    if holds is None:
        # Words a document lacks are no evidence (it may say "novelist" for "writer"); a
        # nation its opening gives in place of the one asked is.
        asked, own = nations(question.asked), nations(_opening(text), first=True)
        holds = False if asked and own and not asked & own else None
    return Said(thing, passages[0], holds, frozenset(), _sentence(passages[0], wanted))


def verdict(question: TwoThings, both: Sequence[Said]) -> bool | None:
    """Yes (True), no (False), or None when the documents do not decide; of a "which" question,
    True for the first thing, False for the second."""
    a, b = both
    if question.which:
        return True if a.holds and not b.holds else False if b.holds and not a.holds else None
    if question.same is not None:
        if not a.values or not b.values:
            return None
        shared = bool(a.values & b.values)
        return shared != question.different
    if a.holds is None or b.holds is None:
        return False if a.holds is False or b.holds is False else None
    return a.holds and b.holds


def verdict_answer(question: TwoThings, decided: bool, both: Sequence[Said]) -> ShortAnswer:
    """The short answer of a decided question: "Yes" or "No" (a verdict: no span, ``start ==
    end`` at the first deciding sentence), or the chosen thing's name as its document writes it
    (as the question writes it, a verdict, when the document writes it otherwise)."""
    if not question.which:
        citation = both[0].sentence.citations[0]
        return ShortAnswer("Yes" if decided else "No", citation.chunk_id, citation.start, citation.start, 1.0)
    chosen = both[0] if decided else both[1]
    named = name_in(chosen.hit, chosen.thing)
    if named is None:
        citation = chosen.sentence.citations[0]
        return ShortAnswer(chosen.thing, citation.chunk_id, citation.start, citation.start, 1.0)
    return named
