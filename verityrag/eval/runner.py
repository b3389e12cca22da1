"""Run the evaluation: ingest, calibrate on the calibration split only, answer the test split, score."""

from __future__ import annotations

import dataclasses
import platform
import subprocess
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verityrag.config import Settings
from verityrag.embed.embedder import Embedder
from verityrag.errors import InvalidInputError
from verityrag.eval.metrics import (
    contains_gold,
    exact_match,
    max_token_f1,
    percentiles,
    rate,
    reliability,
    risk_coverage_curve,
)
from verityrag.eval.sampling import stratified_sample
from verityrag.pipeline import IN_MEMORY, VerityRAGPipeline
from verityrag.serve.bundled import calibrate_on_split
from verityrag.serve.bundled_corpus import DEFAULT_DATA_DIR, EvalQuestion, load_corpus, load_questions
from verityrag.thresholds.precision import wilson_interval
from verityrag.types import QueryResult

REPORT_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class EvalOptions:
    data_dir: Path = DEFAULT_DATA_DIR
    questions: Path | None = None  # an external JSONL evaluated instead of the test split
    real_embeddings: bool = False
    embedding_backend: str = "onnx-int8"  # for real embeddings: "onnx-int8" (faster queries) or "torch"
    max_test_questions: int | None = None
    seed: int = 13
    settings: Settings = field(default_factory=Settings)
    progress: bool = True
    # "elasticsearch": ELASTICSEARCH_URL, or the noida-db emulator started here when it is unset.
    backend: str = "embedded"
    # Learned cross-encoder gates (verityrag.models): a threshold sweep, chosen on calibration.
    answerability: bool = False
    answerability_threshold: float | None = None
    guard: bool = False
    reader: bool = False

    @classmethod
    def from_cli(cls, args: Any) -> EvalOptions:
        """The options ``python -m verityrag.eval`` parsed (one place for every branch)."""
        return cls(
            data_dir=args.data_dir,
            questions=args.questions,
            real_embeddings=args.real_embeddings,
            embedding_backend=args.embedding_backend,
            max_test_questions=args.max_test_questions,
            seed=args.seed,
            # The profile, not the environment's settings (a run is reproducible), but the model
            # folders the environment names (VERITYRAG_GUARD_DIR and the others).
            settings=Settings.profile(args.profile).replace(
                reader=not args.without_reader, **Settings.from_env().model_dirs()
            ),
            progress=not args.no_progress,
            backend=args.backend,
            answerability=args.answerability,
            answerability_threshold=args.answerability_threshold,
            guard=args.guard,
            reader=args.reader,
        )


@dataclass(frozen=True, slots=True)
class QuestionOutcome:
    id: str
    kind: str
    answerable: bool
    answered: bool
    correct: bool
    f1: float
    confidence: float
    abstain_reason: str | None
    latency_ms: float
    stage_ms: dict[str, float]
    answer: str | None
    gold_rank: int | None  # rank (from 1) of the first evidence chunk holding a gold answer
    short_answer: str | None = None  # the reader's span, when the answer came with one
    short_f1: float = 0.0  # SQuAD F1 of the short answer (answerable questions; 0 without one)
    short_em: bool = False

    @property
    def answer_score(self) -> float:
        """The risk-coverage order: an answer by its ``confidence`` (P(it is right)), a refusal below
        every answer (-P(refusing was right)); a refusal's confidence is about the refusal."""
        return self.confidence if self.answered else -self.confidence

    @classmethod
    def of(cls, q: EvalQuestion, result: QueryResult, latency_ms: float) -> QuestionOutcome:
        answer = result.answer if not result.abstained else None
        short = result.short_answer.text if result.short_answer and not result.abstained else None
        correct = bool(answer) and q.answerable and contains_gold(answer or "", q.answers)
        gold_rank = None
        if q.answerable:
            for rank, hit in enumerate(result.evidence, start=1):
                if contains_gold(hit.chunk.text, q.answers):
                    gold_rank = rank
                    break
        stages: dict[str, float] = {}
        for step in result.trace:
            # An agent attempt carries its own stage timings (retrieve, rerank, select, gate).
            parts = step.details.get("timings_ms") or {step.stage: step.duration_ms}
            for stage, ms in parts.items():
                stages[stage] = stages.get(stage, 0.0) + ms
        return cls(
            id=q.id,
            kind=q.kind,
            answerable=q.answerable,
            answered=not result.abstained,
            correct=correct,
            f1=max_token_f1(answer, q.answers) if answer and q.answerable else 0.0,
            confidence=float(result.confidence),
            abstain_reason=result.abstain_reason.value if result.abstain_reason else None,
            latency_ms=latency_ms,
            stage_ms=stages,
            answer=answer,
            gold_rank=gold_rank,
            short_answer=short,
            short_f1=max_token_f1(short, q.answers) if short and q.answerable else 0.0,
            short_em=bool(short) and q.answerable and exact_match(short or "", q.answers),
        )


def build_pipeline(options: EvalOptions) -> VerityRAGPipeline:
    embedder: Embedder | None = None
    if options.real_embeddings:
        from verityrag.embed import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder(backend=options.embedding_backend)  # type: ignore[arg-type]
    if options.backend == "elasticsearch":
        from verityrag.embed.hashing import HashingEmbedder
        from verityrag.index.elastic.from_env import index_from_env_or_emulator
        from verityrag.text.analyzer import DEFAULT_ANALYZER

        embedder = embedder or HashingEmbedder()
        # A dedicated index, recreated per run: the eval never touches ELASTICSEARCH_INDEX.
        index = index_from_env_or_emulator(
            embedder.dim, DEFAULT_ANALYZER, embedder.fingerprint(), "verityrag-eval", announce=_announce
        )
        settings = options.settings.replace(backend="elasticsearch")
        return VerityRAGPipeline(embedder=embedder, settings=settings, index=index, data_dir=IN_MEMORY)
    # In memory whatever VERITYRAG_DATA_DIR says: a user's stored documents must not join the
    # eval corpus (they would move every figure), nor the corpus their store.
    return VerityRAGPipeline(embedder=embedder, settings=options.settings, data_dir=IN_MEMORY)


def _backend_details(pipeline: VerityRAGPipeline) -> dict[str, Any]:
    describe = getattr(pipeline.index, "describe", None)  # ElasticsearchIndex: server, emulator, index
    return dict(describe()) if callable(describe) else {"kind": "embedded"}


def _announce(message: str) -> None:
    import sys

    print(message, file=sys.stderr)


def _progress(items: Sequence[Any], desc: str, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, unit="q", disable=not enabled)


def sample_splits(
    test: Sequence[EvalQuestion], calibration: Sequence[EvalQuestion], n: int | None, seed: int
) -> tuple[list[EvalQuestion], list[EvalQuestion], bool]:
    """``--max-test-questions``: both splits sampled to ``n`` by kind, and whether either shrank.

    The flag covers the calibration split too: a short external ``--questions`` file is kept
    whole while the gates are fitted on a sample, and that run is not the full one either.
    """
    if n is None:
        return list(test), list(calibration), False
    sampled_test = stratified_sample(test, n, seed)
    sampled_calibration = stratified_sample(calibration, n, seed)
    partial = len(sampled_test) < len(test) or len(sampled_calibration) < len(calibration)
    return sampled_test, sampled_calibration, partial


def run_eval(options: EvalOptions) -> dict[str, Any]:
    started = time.perf_counter()
    corpus = load_corpus(options.data_dir / "corpus.jsonl")
    calibration = load_questions(options.data_dir / "questions" / "calibration.jsonl")
    test_path = options.questions or options.data_dir / "questions" / "test.jsonl"
    test = load_questions(test_path)
    if not test:
        raise InvalidInputError("questions", f"{test_path} holds no questions")
    test, calibration, partial = sample_splits(test, calibration, options.max_test_questions, options.seed)

    gates_on = options.answerability or options.guard or options.reader
    if gates_on:  # fail at startup, naming missing files and the command
        from verityrag.eval.gate_sweep import check_learned_gates

        check_learned_gates(options.answerability, options.guard, options.reader, options.settings)
    pipeline = build_pipeline(options)
    t0 = time.perf_counter()
    pipeline.ingest_documents(corpus, progress=options.progress)
    ingest_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    pipeline.train_reranker()
    train_s = time.perf_counter() - t0

    if gates_on:  # attached before calibrate, which fits their thresholds as for any pipeline
        from verityrag.eval.gate_sweep import attach_learned_gates

        attach_learned_gates(
            pipeline, options.answerability, options.guard, options.reader, options.answerability_threshold
        )
    # Calibrated as `make run` calibrates on the bundled corpus (the gates on answerable and
    # held-out-topic questions, `confidence` on all; the reader keeps its model's threshold,
    # decision 0060); the sweep below shows what the others give on every calibration question.
    # Test questions are never seen (data/built/corpus_manifest.json).
    t0 = time.perf_counter()
    calibration_result = calibrate_on_split(pipeline, calibration)
    calibrate_s = time.perf_counter() - t0

    learned_gates: dict[str, Any] = {}
    if gates_on:
        from verityrag.eval.gate_sweep import sweep_learned_gates

        learned_gates = sweep_learned_gates(
            pipeline, calibration, test, calibration_result.get("learned_checks", {}), options.progress
        )

    outcomes: list[QuestionOutcome] = []
    for q in _progress(test, "eval", options.progress):
        q0 = time.perf_counter()
        result = pipeline.query(q.question)
        outcomes.append(QuestionOutcome.of(q, result, (time.perf_counter() - q0) * 1000))

    # After the timed questions: the sweep reads the test questions too, and the reader remembers
    # its recent reads, so the other way round the timings would be of cache hits.
    reader_sweep: dict[str, Any] = {}
    if pipeline.reader is not None:
        from verityrag.eval.reader_sweep import sweep_reader

        reader_sweep = sweep_reader(pipeline, calibration, test, options.progress)

    report = {
        "schema_version": REPORT_SCHEMA_VERSION,
        "config": _config(options, pipeline, test_path),
        "versions": _versions(),
        "seed": options.seed,
        "partial_sample": partial,
        "corpus": {
            "documents": pipeline.index.n_documents,
            "chunks": len(pipeline.index),
            "words": sum(len(d.text.split()) for d in corpus),
            "ingest_seconds": ingest_s,
        },
        "timings_seconds": {
            "ingest": ingest_s,
            "train_reranker": train_s,
            "calibrate": calibrate_s,
            "total": time.perf_counter() - started,
        },
        "calibration": {
            "questions": len(calibration),
            # kept out of the gates' fit, in the confidence fit (serve.bundled.calibrate_on_split)
            "excluded_kinds": ["unanswerable_in_domain"],
            **calibration_result,
        },
        "test": {"questions": len(outcomes), "by_kind": dict(Counter(o.kind for o in outcomes))},
        "metrics": summarise(outcomes),
        "outcomes": [dataclasses.asdict(o) for o in outcomes],
        **({"learned_gates": learned_gates} if learned_gates else {}),
        **({"reader_sweep": reader_sweep} if reader_sweep else {}),
    }
    return report


def summarise(outcomes: Sequence[QuestionOutcome]) -> dict[str, Any]:
    answerable = [o for o in outcomes if o.answerable]
    answered = [o for o in answerable if o.answered]
    correct = sum(o.correct for o in answerable)  # only answered questions can be correct
    # Every answer given, to any question: an answer to a question the corpus cannot answer is
    # wrong, and "accuracy of answered" (answerable questions only) leaves those out.
    answers_given = sum(o.answered for o in outcomes)
    # Correct abstention is a rate over the questions that have no answer, by kind: an external
    # file's own kind for answerable questions ("factoid") is not a kind to abstain on.
    must_abstain = [o for o in outcomes if not o.answerable]
    abstained = {  # kind -> (abstained, questions)
        kind: (sum(not o.answered for o in must_abstain if o.kind == kind), _count(must_abstain, kind))
        for kind in sorted({o.kind for o in must_abstain})
    }
    abstention = {kind: rate(k, n) for kind, (k, n) in abstained.items()}
    reasons: dict[str, Counter[str]] = {}
    for o in outcomes:
        if o.abstain_reason:
            reasons.setdefault(o.kind, Counter())[o.abstain_reason] += 1
    stage_names = sorted({s for o in outcomes for s in o.stage_ms})
    curve_all = risk_coverage_curve([o.answer_score for o in outcomes], [o.correct for o in outcomes])
    curve_ans = risk_coverage_curve([o.answer_score for o in answerable], [o.correct for o in answerable])
    # 95% Wilson intervals of the headline rates: 200 answerable questions leave a rate about
    # +-7 points of sampling error, which readers comparing two columns or two runs need to see.
    intervals = {
        "coverage": wilson_interval(len(answered), len(answerable)),
        "answered_and_correct": wilson_interval(correct, len(answerable)),
        "accuracy_of_answered": wilson_interval(correct, len(answered)),
        "accuracy_of_all_answers": wilson_interval(correct, answers_given),
        "correct_abstention": {kind: wilson_interval(k, n) for kind, (k, n) in abstained.items()},
    }
    return {
        "intervals_95": intervals,
        "coverage": rate(len(answered), len(answerable)),
        "answered_and_correct": rate(correct, len(answerable)),
        "accuracy_of_answered": rate(correct, len(answered)),
        "accuracy_of_all_answers": rate(correct, answers_given),
        "f1_answerable": rate(sum(o.f1 for o in answerable), len(answerable)),
        "f1_answered": rate(sum(o.f1 for o in answered), len(answered)),
        # The reader's span against the gold answers (SQuAD EM / F1), over answered answerable questions.
        "short_answer": {
            "answered_with_span": sum(o.short_answer is not None for o in answered),
            "f1_answered": rate(sum(o.short_f1 for o in answered), len(answered)),
            "em_answered": rate(sum(o.short_em for o in answered), len(answered)),
        },
        "correct_abstention": abstention,
        "abstain_reasons": {k: dict(v) for k, v in reasons.items()},
        "evidence_recall": {
            f"at_{k}": rate(sum(1 for o in answerable if o.gold_rank and o.gold_rank <= k), len(answerable))
            for k in (1, 3, 5)
        },
        "answerable_failure_analysis": failure_categories(answerable),
        "answered_share_of_all": rate(sum(o.answered for o in outcomes), len(outcomes)),
        "risk_coverage": {
            "all_questions": curve_all.as_dict(),
            "answerable_only": curve_ans.as_dict(),
        },
        "aurc": {"all_questions": curve_all.aurc, "answerable_only": curve_ans.aurc},
        # Is `confidence` the probability that the reply is right? An answer is right when it holds
        # a gold answer, a refusal when the question has none.
        "confidence_calibration": reliability(
            [o.confidence for o in outcomes],
            [o.correct if o.answered else not o.answerable for o in outcomes],
        ),
        "latency_ms": {
            "per_question": percentiles([o.latency_ms for o in outcomes]),
            "per_stage": {
                s: percentiles([o.stage_ms[s] for o in outcomes if s in o.stage_ms]) for s in stage_names
            },
        },
    }


def failure_categories(answerable: Sequence[QuestionOutcome], evidence_k: int = 3) -> dict[str, int]:
    """Where answerable questions go: answered right, or which stage lost them.

    ``gold in evidence`` means a gold answer is in one of the top ``evidence_k`` chunks the
    answer was chosen from. Then a wrong answer is the wrong span or sentence picked; a refusal
    by the reader (``answerability``) is the reader finding no span where there was one; any
    other refusal a gate or check that was too strict.
    """
    out = {
        "answered_correct": 0,
        "answered_wrong_span_gold_in_evidence": 0,
        "answered_wrong_gold_not_retrieved": 0,
        "reader_found_no_span_gold_in_evidence": 0,
        "abstained_other_gold_in_evidence": 0,
        "abstained_gold_not_retrieved": 0,
    }
    for o in answerable:
        in_evidence = o.gold_rank is not None and o.gold_rank <= evidence_k
        if o.answered:
            if o.correct:
                out["answered_correct"] += 1
            else:
                out[
                    "answered_wrong_span_gold_in_evidence"
                    if in_evidence
                    else "answered_wrong_gold_not_retrieved"
                ] += 1
        elif not in_evidence:
            out["abstained_gold_not_retrieved"] += 1
        elif o.abstain_reason == "answerability":
            out["reader_found_no_span_gold_in_evidence"] += 1
        else:
            out["abstained_other_gold_in_evidence"] += 1
    return out


def _count(outcomes: Sequence[QuestionOutcome], kind: str) -> int:
    return sum(1 for o in outcomes if o.kind == kind)


def _config(options: EvalOptions, pipeline: VerityRAGPipeline, test_path: Path) -> dict[str, Any]:
    return {
        "settings": dataclasses.asdict(pipeline.settings),
        "embedder": pipeline.embedder.fingerprint(),
        "backend": _backend_details(pipeline),
        "real_embeddings": options.real_embeddings,
        "embedding_backend": options.embedding_backend if options.real_embeddings else None,
        "questions_file": _relative(test_path),
        "max_test_questions": options.max_test_questions,
    }


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(DEFAULT_DATA_DIR.parent))
    except ValueError:
        return str(path)


def _versions() -> dict[str, str]:
    import lightgbm
    import numpy
    import sklearn

    import verityrag

    versions = {
        "verityrag": verityrag.__version__,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "lightgbm": lightgbm.__version__,
        "scikit-learn": sklearn.__version__,
        "machine": f"{platform.machine()} {platform.system()}",
    }
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=DEFAULT_DATA_DIR.parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout.strip()
        if commit:
            versions["git_commit"] = commit
    except OSError:
        pass
    return versions
