"""The extractive reader in the answer path: the short answer, the sentence(s) holding it, or none.

:class:`EvidenceReader` puts the best sentences of the top hits (the sentence selector's
ranking) in front of an extractive reader, within a token budget that keeps one model window
per question, and reads the best answer span and the reader's no-answer score:

- the **short answer** is the span, mapped back to its chunk and character offsets;
- the **answer sentences** are the sentence holding it and, when the sentence that matches
  the question best sits right beside it in the same chunk, that one too (so "In the same
  year, he patented ..." is answered together with the sentence that names the year);
- the **answer logit** (best span score minus the no-answer score) says how sure the reader is
  that the evidence answers at all; the agent compares it with a threshold;
- the **expected type** of the question (:mod:`verityrag.text.answer_types`): the answer is the
  best span of that type (a price for "what do you charge", not the row's other cells), and
  when no span is, the best one is flagged: a price question answered by a capacity is refused;
- the question's **subjects** (:mod:`verityrag.text.subjects`: the names, titles and numbers it
  mentions) must be named by the passage that holds the span or by its document's title: the
  best span whose passage does is the answer, and when no span's passage does, the reading says
  which subjects were not found (the agent refuses). The length of the other ship is no answer
  to "How long is the MV Lissa Wren?";
- the **alternatives**: the reader's other spans in *other sources* whose passages name the
  subjects too, of the kind the question asks for, that say something else (no word in common
  with the answer): where documents disagree (two prices, two years). A source is a document,
  or the source its metadata declares (``source``: documents that declare one source are one),
  never a title, which anyone can copy. :meth:`EvidenceReader.read_other_sources` reads the best
  passage of the next other sources among the hits too, since the first read's budget rarely
  reaches a second document's value. The agent decides which are well enough supported to report;
- the **corroborations**: other sources' spans that give the same answer; they count for it
  (a noisy-or of the reader's probabilities), so an answer two documents give is surer than
  one either gives alone.
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from verityrag.generation.sentence_selector import ScoredSentence
from verityrag.text.answer_types import MONTHS, AnswerType, expected_type, matches
from verityrag.text.answers import answer_tokens, contains_gold
from verityrag.text.sections import heading_flags, heading_spans, last_heading
from verityrag.text.sentences import holding as sentences_holding
from verityrag.text.sentences import sentence_spans
from verityrag.text.stopwords import ENGLISH_STOPWORDS
from verityrag.text.subjects import Subject, missing_subjects, question_subjects, text_terms
from verityrag.types import Chunk, Citation, CitedSentence, Hit, ShortAnswer, source_key

#: Tokens of evidence one read puts in front of the model (one window with the question).
DEFAULT_EVIDENCE_TOKENS = 160
#: The answer logit is clipped here for features and reports (a NaN reads as "no answer").
LOGIT_CLIP = 20.0
#: Spans a read returns: the best one whose passage names the question's subjects is the answer.
SPANS_READ = 10
#: Other sources :meth:`EvidenceReader.read_other_sources` reads, and the tokens of each: one
#: batch of two short passages costs about one read.
OTHER_SOURCES_READ = 2
OTHER_SOURCE_TOKENS = 96

#: A document's source: who says what it says (:func:`verityrag.types.source_key`).
SourceOf = Callable[[str], str]


class SpanFound(Protocol):
    """One candidate span of a read: ``evidence[start:end]`` and its score."""

    @property
    def text(self) -> str: ...

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...

    @property
    def score(self) -> float: ...


class ReadResult(Protocol):
    """What a reader model returns for one (question, evidence) pair: its best spans, best first,
    and the no-answer score (a span's score less it is that span's answer logit)."""

    @property
    def spans(self) -> Sequence[SpanFound]: ...

    @property
    def null_score(self) -> float: ...

    @property
    def best(self) -> SpanFound | None: ...

    @property
    def answer_logit(self) -> float: ...


class ReaderModel(Protocol):
    """An extractive reader model (:class:`~verityrag.models.span_reader.SpanReader`, or one of a hub)."""

    def read_batch(self, pairs: Sequence[tuple[str, str]], k: int = ...) -> Sequence[ReadResult]: ...

    def count_tokens(self, text: str) -> int: ...


@dataclass(frozen=True, slots=True)
class _Passage:
    """A run of consecutive sentences of one chunk, as placed in the text the reader reads."""

    chunk: Chunk
    start: int  # in the chunk's text
    end: int
    offset: int  # where it begins in the text the reader reads
    heading: bool = False  # the name of the section of the passage after it: context, never an answer


@dataclass(frozen=True, slots=True)
class Alternative:
    """Another document's answer to the same question: its span, where, and its answer logit."""

    text: str
    chunk_id: str
    doc_id: str
    title: str
    answer_logit: float

    def trace_details(self) -> dict[str, object]:
        return {
            "answer": self.text,
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "title": self.title,
            "answer_logit": round(self.answer_logit, 4),
        }


@dataclass(frozen=True, slots=True)
class Reading:
    """What the reader found for one attempt's evidence."""

    short_answer: ShortAnswer | None
    answer_logit: float  # clipped to +-LOGIT_CLIP; -LOGIT_CLIP when nothing was read
    sentences: tuple[CitedSentence, ...]
    expected: AnswerType
    type_ok: bool
    evidence_tokens: int
    #: The question's subjects that no passage holding a span names (the best span's, when none
    #: does: then ``short_answer`` is None); empty when the answer's passage names them all.
    missing_subjects: tuple[str, ...] = ()
    #: Other documents' answers that disagree with ``short_answer``, best first, one per document.
    alternatives: tuple[Alternative, ...] = ()
    #: Other sources' spans that give ``short_answer`` too, one per source: they count for it
    #: (``answer_logit`` is their combined support, see :func:`corroborated_logit`).
    corroborations: tuple[Alternative, ...] = ()

    @property
    def answer_probability(self) -> float:
        return probability(self.answer_logit)

    def trace_details(self) -> dict[str, object]:
        return {
            "missing_subjects": list(self.missing_subjects),
            "alternatives": [a.trace_details() for a in self.alternatives],
            "corroborations": [a.trace_details() for a in self.corroborations],
            "answer_logit": round(self.answer_logit, 4),
            "answer_probability": round(self.answer_probability, 4),
            "short_answer": self.short_answer.text if self.short_answer else None,
            "chunk_id": self.short_answer.chunk_id if self.short_answer else None,
            "expected_type": self.expected.value,
            "type_ok": self.type_ok,
            "evidence_tokens": self.evidence_tokens,
        }


NOTHING_READ = Reading(None, -LOGIT_CLIP, (), AnswerType.ANY, False, 0)


def logit(p: float) -> float:
    """The log-odds of a probability (+-inf at 1 and 0)."""
    if p <= 0.0:
        return -math.inf
    if p >= 1.0:
        return math.inf
    return math.log(p / (1.0 - p))


def probability(x: float) -> float:
    """The probability of a log-odds (0 and 1 at -inf and +inf), without overflow."""
    if math.isinf(x):
        return 1.0 if x > 0 else 0.0
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def _clip(x: float) -> float:
    if math.isnan(x):
        return -LOGIT_CLIP
    return max(-LOGIT_CLIP, min(LOGIT_CLIP, x))


class EvidenceReader:
    """Reads the best-ranked sentences of an attempt with ``model``; constructor stores parameters only."""

    def __init__(
        self,
        model: ReaderModel,
        evidence_tokens: int = DEFAULT_EVIDENCE_TOKENS,
        cache_size: int = 1024,
    ) -> None:
        if evidence_tokens < 16:
            raise ValueError("evidence_tokens must be >= 16")
        self.model = model
        self.evidence_tokens = evidence_tokens
        self.cache_size = cache_size
        # (question, text read) -> the model's result: the agent's attempts at one question often
        # read the same sentences, and a model read is most of a query's time. Exact: a read
        # depends on nothing else.
        self._cache: OrderedDict[tuple[str, str], ReadResult] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def open(cls, model: str | None = None) -> EvidenceReader:
        """A reader over the model ``model`` names (:func:`~verityrag.models.hf_reader.open_reader`:
        "" or None for the shipped one), its files checked now: a missing model stops the start
        naming the command that builds it. The model itself loads on first use or :meth:`warm_up`."""
        from verityrag.models.hf_reader import open_reader

        found = open_reader(model or None)
        check = getattr(found, "check_files", None)
        if callable(check):
            check()
        return cls(found)

    def warm_up(self) -> EvidenceReader:
        warm = getattr(self.model, "warm_up", None)
        if callable(warm):
            warm()
        return self

    def passages(
        self, hits: Sequence[Hit], ranked: Sequence[ScoredSentence], tokens: int | None = None
    ) -> tuple[str, list[_Passage], int]:
        """The text the reader reads: the best sentences within the budget (``tokens``, else the
        reader's ``evidence_tokens``), each chunk's in order.

        Sentences are taken best first until the budget is spent (the first always, cut by the
        model's window if it is longer); those of one chunk are joined in their order, merged
        where they touch, and the chunks follow the rank of their best sentence. A run of
        sentences under a heading of its chunk (:mod:`verityrag.text.sections`) is read after
        that heading, which is context: no answer is taken from it.
        """
        budget = self.evidence_tokens if tokens is None else tokens
        chunks = {h.chunk_id: h.chunk for h in hits}
        picked: dict[str, list[tuple[int, int]]] = {}
        used = 0
        for s in ranked:
            cit = s.sentence.citations[0]
            if cit.chunk_id not in chunks:
                continue
            size = self.model.count_tokens(s.sentence.text)
            if picked and used + size > budget:
                continue
            used += size
            picked.setdefault(cit.chunk_id, []).append((cit.start, cit.end))
            if used >= budget:
                break
        text_parts: list[str] = []
        passages: list[_Passage] = []
        offset = 0
        for chunk_id, spans in picked.items():
            chunk = chunks[chunk_id]
            runs: list[list[int]] = []
            for start, end in sorted(spans):
                if runs and start <= runs[-1][1] + 1:
                    runs[-1][1] = max(runs[-1][1], end)
                else:
                    runs.append([start, end])
            pieces: list[tuple[int, int, bool]] = []
            headings = heading_spans(chunk.text)  # once per chunk, for each of its runs
            for start, end in runs:
                heading = last_heading(headings, start)
                if (
                    heading is not None
                    and not any(s <= heading[0] < e for s, e, _ in pieces)
                    and not any(s <= heading[0] < e for s, e in runs)
                ):
                    pieces.append((heading[0], heading[1], True))
                    used += self.model.count_tokens(chunk.text[heading[0] : heading[1]])
                pieces.append((start, end, False))
            for start, end, is_heading in pieces:
                if text_parts:
                    text_parts.append(" ")
                    offset += 1
                passages.append(_Passage(chunk, start, end, offset, is_heading))
                piece = chunk.text[start:end]
                text_parts.append(piece)
                offset += len(piece)
        return "".join(text_parts), passages, used

    def _read(self, question: str, text: str) -> ReadResult:
        return self._read_many([(question, text)])[0]

    def _read_many(self, pairs: Sequence[tuple[str, str]]) -> list[ReadResult]:
        """The model's result for each (question, text) pair: from the cache, else read, those
        not cached in one batch."""
        found: dict[tuple[str, str], ReadResult] = {}
        with self._lock:
            for key in pairs:
                if key in self._cache:
                    self._cache.move_to_end(key)
                    found[key] = self._cache[key]
        missing = [key for key in dict.fromkeys(pairs) if key not in found]
        if missing:
            for key, result in zip(missing, self.model.read_batch(missing, k=SPANS_READ), strict=True):
                found[key] = result
            with self._lock:
                for key in missing:
                    self._cache[key] = found[key]
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        return [found[key] for key in pairs]

    def read_other_sources(
        self,
        question: str,
        hits: Sequence[Hit],
        ranked: Sequence[ScoredSentence],
        reading: Reading,
        source_of: SourceOf = source_key,
        require_subjects: bool = True,
    ) -> Reading:
        """``reading`` with the answers of the next :data:`OTHER_SOURCES_READ` other sources among
        ``hits`` added to its alternatives where they disagree (one per source, the surer read).
        Each source's best sentences (:data:`OTHER_SOURCE_TOKENS` of them, in its chunks that
        name the question's subjects) are read on their own, in one batch, and the best span is
        what the source says. The first read takes the best sentences of all the hits, so a
        second document's value is rarely among them: before this read, 1 of the 14 dev
        conflicts (a price list and an old leaflet) was reported."""
        answer = reading.short_answer
        if answer is None:
            return reading
        by_id = {h.chunk_id: h.chunk for h in hits}
        chosen = by_id.get(answer.chunk_id)
        if chosen is None:
            return reading
        subjects = question_subjects(question) if require_subjects else []
        # Sources that give the answer too need no second read (an attacker's copies say it
        # alike: the source that disagrees comes after them).
        seen = {source_of(chosen.doc_id)} | {source_of(a.doc_id) for a in reading.corroborations}
        # Sources in the order of their best sentence (the selector's ranking): a source's first
        # hit may be its opening paragraph, its value further on.
        order: list[str] = []
        for scored in ranked:
            chunk = by_id.get(scored.sentence.citations[0].chunk_id) if scored.sentence.citations else None
            if chunk is None or (key := source_of(chunk.doc_id)) in seen:
                continue
            seen.add(key)
            order.append(key)
        for hit in hits:  # then those the selector ranked no sentence of
            if (key := source_of(hit.chunk.doc_id)) not in seen:
                seen.add(key)
                order.append(key)
        reads = []
        for key in order:
            own = [h for h in hits if source_of(h.chunk.doc_id) == key and not _missing_in(subjects, h.chunk)]
            if any(contains_gold(h.chunk.text, [answer.text]) for h in own):
                continue  # it says the answer too (an attacker's copies do): no rival there
            text, passages, _ = self.passages(own, _ranked_within(question, own, ranked), OTHER_SOURCE_TOKENS)
            if passages:
                reads.append((text, passages))
            if len(reads) == OTHER_SOURCES_READ:
                break
        if not reads:
            return reading
        results = self._read_many([(question, text) for text, _ in reads])
        # A question that names nothing ("When was the harbour wall rebuilt?") is tied to its
        # answer by the words it shares with the answer's passage: a rival's passage must share at
        # least half of them, or a tide mill's "restored in 1985" is the harbour wall's other date.
        tie = _content_terms(question) & text_terms([chosen.text, chosen.title]) if not subjects else None
        kind = reading.expected
        found: list[Alternative] = []
        for (_, passages), result in zip(reads, results, strict=True):
            span = next((sp for sp in result.spans if not _passage_of(passages, sp.start).heading), None)
            if span is None:
                continue
            chunk = _passage_of(passages, span.start).chunk
            text = span.text.strip()
            if text and _rival(answer.text, text, kind) and _same_question(tie, chunk):
                found.append(
                    Alternative(
                        text, chunk.chunk_id, chunk.doc_id, chunk.title, _clip(span.score - result.null_score)
                    )
                )
        if not found:
            return reading
        # One per source, its surest: read on its own, a source's value is often read surer
        # than beside the answer's passage.
        best: dict[str, Alternative] = {}
        for alt in (*reading.alternatives, *found):
            key = source_of(alt.doc_id)
            if key not in best or alt.answer_logit > best[key].answer_logit:
                best[key] = alt
        alternatives = tuple(sorted(best.values(), key=lambda a: -a.answer_logit))
        return replace(reading, alternatives=alternatives)

    def read(
        self,
        question: str,
        hits: Sequence[Hit],
        ranked: Sequence[ScoredSentence],
        require_subjects: bool = True,
        source_of: SourceOf = source_key,
        links: Mapping[str, Chunk] | None = None,
    ) -> Reading:
        """The reader's finding in the best sentences of ``ranked`` (the selector's order over ``hits``);
        with ``require_subjects``, in a passage that names what the question is about.
        ``source_of`` says which documents are one source (their alternatives do not count).
        ``links``: a document's linking passage (a bridge's first hop, which names the question's
        subjects and that document): what it names counts as named by the document's passages."""
        text, passages, used = self.passages(hits, ranked)
        if not passages:
            return NOTHING_READ
        result = self._read(question, text)
        kind = expected_type(question)
        if result.best is None:
            return Reading(None, _clip(result.answer_logit), (), kind, False, used)
        subjects = question_subjects(question) if require_subjects else []
        # Per chunk, once: several spans (and the alternatives) fall in one chunk, and naming is
        # an analysis of its whole text.
        lacking_by_chunk: dict[str, tuple[str, ...]] = {}

        def missing_in(chunk: Chunk) -> tuple[str, ...]:
            if chunk.chunk_id not in lacking_by_chunk:
                link = links.get(chunk.doc_id) if links else None
                lacking_by_chunk[chunk.chunk_id] = _missing_in(subjects, chunk, link)
            return lacking_by_chunk[chunk.chunk_id]

        missing: tuple[str, ...] | None = None
        # The best span whose passage names the subjects and which is of the kind asked; else
        # the best naming one (of the wrong kind: the agent refuses it). "What do you charge for
        # a scale and polish?" read over a price list's row gets its price, not the
        # "general anaesthetic" the model ranked first; the price keeps its own, lower logit.
        found: tuple[SpanFound, _Passage] | None = None
        for span in result.spans:
            passage = _passage_of(passages, span.start)
            if passage.heading:
                continue  # a section's name is its context, not an answer
            lacking = missing_in(passage.chunk)
            if missing is None:  # the best answer's
                missing = lacking
            if lacking:
                continue
            if found is None:
                found = span, passage
            if matches(span.text, kind):
                found = span, passage
                break
        if found is None:
            # No span's passage names what the question asks about: the model's own decision value
            # is kept (the gate reads it), the answer is none.
            return Reading(None, _clip(result.answer_logit), (), kind, False, used, missing or ())
        span, passage = found
        start = passage.start + span.start - passage.offset
        end = min(passage.end, passage.start + span.end - passage.offset)
        span_text = passage.chunk.text[start:end].strip()
        own = _clip(result.answer_logit if span is result.spans[0] else span.score - result.null_score)
        agreeing = _corroborations(result, passages, passage.chunk, span_text, missing_in, source_of)
        logit = corroborated_logit(own, [a.answer_logit for a in agreeing])
        short = ShortAnswer(span_text, passage.chunk.chunk_id, start, end, probability(logit))
        sentences = answer_sentences(passage.chunk, start, end, ranked)
        others = _alternatives(result, passages, passage.chunk, span_text, missing_in, kind, source_of)
        return Reading(short, logit, sentences, kind, matches(span_text, kind), used, (), others, agreeing)


def _alternatives(
    result: ReadResult,
    passages: Sequence[_Passage],
    chosen: Chunk,
    answer: str,
    missing_in: Callable[[Chunk], tuple[str, ...]],
    kind: AnswerType,
    source_of: SourceOf,
) -> tuple[Alternative, ...]:
    """The best span of each other source that answers the same question differently
    (:func:`disagree`), of the kind asked for (:func:`_other_sources`). An article's paragraphs
    are one source when they declare it (the bundled corpus does): on the bundled calibration
    questions, every disagreement reported within one article was two right answers to a
    question that has several (5 of 550 questions)."""

    return _other_sources(
        result, passages, chosen, missing_in, lambda text: _rival(answer, text, kind), source_of
    )


def _rival(answer: str, text: str, kind: AnswerType) -> bool:
    """``text`` answers the question otherwise than ``answer``: of the kind asked for, saying
    something else (:func:`disagree`), a value of the same kind (:func:`comparable`)."""
    return (
        (kind is AnswerType.ANY or matches(text, kind))
        and disagree(answer, text)
        and comparable(answer, text)
    )


def _corroborations(
    result: ReadResult,
    passages: Sequence[_Passage],
    chosen: Chunk,
    answer: str,
    missing_in: Callable[[Chunk], tuple[str, ...]],
    source_of: SourceOf,
) -> tuple[Alternative, ...]:
    """The best span of each other source that gives ``answer`` (:func:`same_answer`)."""
    return _other_sources(
        result, passages, chosen, missing_in, lambda text: same_answer(answer, text), source_of
    )


def _other_sources(
    result: ReadResult,
    passages: Sequence[_Passage],
    chosen: Chunk,
    missing_in: Callable[[Chunk], tuple[str, ...]],
    keep: Callable[[str], bool],
    source_of: SourceOf,
) -> tuple[Alternative, ...]:
    """The reader's spans outside ``chosen``'s source that ``keep`` accepts, in passages naming
    the question's subjects (``missing_in`` finds none missing): the best of each source (the
    spans come best first), then sorted by answer logit."""
    best: dict[str, Alternative] = {}
    own = source_of(chosen.doc_id)
    for span in result.spans:
        passage = _passage_of(passages, span.start)
        chunk = passage.chunk
        text = span.text.strip()
        if passage.heading:
            continue
        key = source_of(chunk.doc_id)
        if not text or key == own or key in best or not keep(text) or missing_in(chunk):
            continue
        logit = _clip(span.score - result.null_score)
        best[key] = Alternative(text, chunk.chunk_id, chunk.doc_id, chunk.title, logit)
    return tuple(sorted(best.values(), key=lambda a: -a.answer_logit))


def corroborated_logit(own: float, others: Sequence[float]) -> float:
    """The answer's support when independent sources give it too: the chance that at least one of
    them is right (a noisy-or of their probabilities), as a logit; ``own`` alone without others.
    Only sources the reader reads as answers add much: one at probability 0.5 beside an answer at
    0.9 makes it 0.95."""
    if not others:
        return own
    wrong = 1.0 - probability(own)
    for other in others:
        wrong *= 1.0 - probability(other)
    return _clip(logit(1.0 - wrong) if wrong > 0.0 else LOGIT_CLIP)


def same_answer(a: str, b: str) -> bool:
    """Two spans give one answer: the same content words (and numbers), case and punctuation
    aside ("Ewan Tolley", "ewan tolley,"); "Ewan" alone is not "Ewan Tolley"."""
    words_a = set(answer_tokens(a)) - ENGLISH_STOPWORDS
    return bool(words_a) and words_a == set(answer_tokens(b)) - ENGLISH_STOPWORDS


def disagree(a: str, b: str) -> bool:
    """Two answers say different things: their numbers differ when both give numbers ("88 metres",
    "64 metres"), else they share no content word ("Ewan Tolley", "Ewan" agree)."""
    ta, tb = answer_tokens(a), answer_tokens(b)
    numbers_a = {t for t in ta if any(c.isdigit() for c in t)}
    numbers_b = {t for t in tb if any(c.isdigit() for c in t)}
    if numbers_a and numbers_b:
        return not numbers_a & numbers_b
    if _is_name(a) and _is_name(b):
        # Names differ by their names, not their common nouns: "the Ashby family" and "the
        # Penrose family" disagree, "Ewan Tolley" and "Captain Ewan" do not.
        names_a, names_b = _capitalised(a), _capitalised(b)
        return bool(names_a) and bool(names_b) and not names_a & names_b
    words_a, words_b = set(ta) - ENGLISH_STOPWORDS, set(tb) - ENGLISH_STOPWORDS
    return bool(words_a) and bool(words_b) and not words_a & words_b


def _capitalised(text: str) -> set[str]:
    return {
        w.lower()
        for w in re.findall(r"[^\W\d_]+", text)
        if w[0].isupper() and w.lower() not in ENGLISH_STOPWORDS
    }


def _ranked_within(
    question: str, hits: Sequence[Hit], ranked: Sequence[ScoredSentence]
) -> list[ScoredSentence]:
    """The sentences of ``hits``' chunks best first: those ``ranked`` holds in its order, then
    the rest by the question's words they share (the selector ranks only the best few of all)."""
    ids = {h.chunk_id for h in hits}
    own = [s for s in ranked if s.sentence.citations and s.sentence.citations[0].chunk_id in ids]
    taken = {(s.sentence.citations[0].chunk_id, s.sentence.citations[0].start) for s in own}
    asked = set(answer_tokens(question)) - ENGLISH_STOPWORDS
    rest: list[tuple[int, int, ScoredSentence]] = []
    for rank, hit in enumerate(hits):
        chunk = hit.chunk
        for start, end in sentence_spans(chunk.text):
            if (chunk.chunk_id, start) in taken:
                continue
            citation = Citation(chunk.chunk_id, chunk.doc_id, chunk.title, start, end)
            text = chunk.text[start:end]
            shared = len(asked & set(answer_tokens(text)))
            scored = ScoredSentence(CitedSentence(text, (citation,)), float(shared), rank, _NO_FEATURES)
            rest.append((-shared, rank, scored))
    return own + [scored for *_, scored in sorted(rest, key=lambda r: (r[0], r[1]))]


_NO_FEATURES = np.zeros(0, dtype=np.float32)


_WORD = re.compile(r"[^\W_]+(?:[.,:][0-9]+)*|[£$€¥%]")
_CURRENCY = frozenset("£$€¥%")


def _shape(text: str) -> tuple[frozenset[str], frozenset[str], bool]:
    """What kind of value ``text`` is: its currency and percent signs, the unit after each of its
    numbers (the first word that is not a stop word nor a name: "£8 an hour" -> hour, "7am" ->
    am, "25 GB" -> gb), and whether it holds a number at all."""
    words = _WORD.findall(text)
    signs = frozenset(w for w in words if w in _CURRENCY)
    units: set[str] = set()
    numeric = False
    for i, word in enumerate(words):
        if not any(c.isdigit() for c in word):
            continue
        numeric = True
        suffix = word.lstrip("0123456789.,:")
        if suffix.isalpha():  # "7am", "25GB"
            units.add(suffix.lower())
            continue
        for after in words[i + 1 : i + 3]:
            low = after.lower()
            if low in MONTHS:  # a date: "5 April" is no time of day
                units.add(low[:3])
                break
            if after in _CURRENCY or any(c.isdigit() for c in after) or after.istitle():
                break  # a name after a number is no unit: "3 Pier Road"
            if low not in ENGLISH_STOPWORDS:
                units.add(low.removesuffix("s"))
                break
    return signs, frozenset(units), numeric


#: Two amounts whose units cannot be compared are of one kind when neither is this many times the other.
MAX_RIVAL_RATIO = 20.0


def _first_number(text: str) -> float:
    found = re.search(r"\d[\d,]*(?:\.\d+)?", text)
    return float(found.group().replace(",", "")) if found else 0.0


def _is_name(text: str) -> bool:
    """Its first word that is not a stop word begins with a capital ("Ewan Tolley", "the Ashby
    family"; not "the treasurer", "our money advice officer")."""
    words = [w for w in re.findall(r"[^\W\d_]+", text) if w.lower() not in ENGLISH_STOPWORDS]
    return bool(words) and words[0][0].isupper()


def comparable(answer: str, rival: str) -> bool:
    """Whether ``rival`` is a value of the kind ``answer`` is, so that the two can disagree: two
    amounts in one currency and unit ("£8 an hour", "£10 an hour"; not "£35 a year" and
    "£22,500", nor "7am to 4pm" and "5 April"), two names ("Ewan Tolley" and "Mara Lind"; not
    "the treasurer"), or two phrases. Another answer to another question in the same passage is
    seldom of the same kind (on the dev domains, 6 of 9 disagreements reported on answerable
    questions were not). Units are compared where both say one; else the amounts' orders."""
    signs_a, units_a, numeric_a = _shape(answer)
    signs_b, units_b, numeric_b = _shape(rival)
    if numeric_a or numeric_b:
        if not (numeric_a and numeric_b and signs_a == signs_b):
            return False
        if units_a and units_b:
            return bool(units_a & units_b)
        # One says its unit, one does not ("£18 per night", "£45"): amounts of one kind are of
        # one order ("£35 a year" and "£22,500" are not).
        low, high = sorted((_first_number(answer), _first_number(rival)))
        return low > 0 and high / low <= MAX_RIVAL_RATIO
    if _is_name(answer):
        return _is_name(rival)
    return not _is_name(rival)


def _passage_of(passages: Sequence[_Passage], offset: int) -> _Passage:
    """The passage of the read text that holds ``offset``."""
    return next((p for p in reversed(passages) if p.offset <= offset), passages[0])


def _same_question(tie: frozenset[str] | None, chunk: Chunk) -> bool:
    """``chunk`` shares at least half of the words ``tie`` that bind the question to its answer
    (None: the question's names bind it, checked already)."""
    if not tie:
        return True
    return 2 * len(tie & text_terms([chunk.text, chunk.title])) >= len(tie)


def _content_terms(question: str) -> frozenset[str]:
    """The analysed words of ``question`` less its question words ("when", "how", "much" ...)."""
    return text_terms([question]) - _QUESTION_TERMS


#: The analysed forms of the words a question asks with, which tie no answer to it.
_QUESTION_TERMS = text_terms(
    ["what when where which who whom whose why how much many long often does do did is are was were"]
)


def _missing_in(subjects: Sequence[Subject], chunk: Chunk, link: Chunk | None = None) -> tuple[str, ...]:
    """The subjects that neither ``chunk``'s text nor its document's title names (nor ``link``,
    the passage that leads to its document)."""
    if not subjects:
        return ()
    texts = [chunk.text, chunk.title] + ([link.text, link.title] if link is not None else [])
    return tuple(s.text for s in missing_subjects(subjects, text_terms(texts)))


def answer_sentences(
    chunk: Chunk, start: int, end: int, ranked: Sequence[ScoredSentence]
) -> tuple[CitedSentence, ...]:
    """The sentence(s) of ``chunk`` holding ``chunk.text[start:end]`` (a span may run over a sentence
    boundary the splitter saw, as after "[O.S."), with the best-ranked sentence of the same chunk
    when it is right beside them (before or after), in their order."""
    spans = sentence_spans(chunk.text)
    if not spans:
        return ()
    headings = heading_flags(chunk.text, spans)
    holding = sentences_holding(spans, start, end)
    if not holding:
        holding = [min(range(len(spans)), key=lambda i: abs(spans[i][0] - start))]
    chosen = set(holding)
    best_here = next((s for s in ranked if s.sentence.citations[0].chunk_id == chunk.chunk_id), None)
    if best_here is not None:
        cit = best_here.sentence.citations[0]
        index = next((i for i, (s, e) in enumerate(spans) if s == cit.start and e == cit.end), None)
        beside = index is not None and (index == holding[0] - 1 or index == holding[-1] + 1)
        if index is not None and beside and not headings[index]:
            chosen.add(index)
    return tuple(
        CitedSentence(
            chunk.text[spans[i][0] : spans[i][1]],
            (Citation(chunk.chunk_id, chunk.doc_id, chunk.title, spans[i][0], spans[i][1]),),
        )
        for i in sorted(chosen)
    )
