"""``python -m verityrag.eval --real-llm PROVIDER``: the eval with an LLM writing the answers.

Same corpus, calibration and gates as the main eval; after the gates an LLM answers
from the numbered evidence through reject-and-retry (or best-of-N) with the grounding
verifier. Writes the usual metrics plus the LLM's own figures (attempts, what the
verifier caught at each attempt, tokens, latency) to ``eval_report_llm_<provider>.json``,
and every generated answer, attempt by attempt with its verdicts and the evidence it
was given, to ``guard_work/eval/llm_answers_<provider>.jsonl`` (git-ignored: it quotes the
corpus): labelled real LLM output to train and test the guard on.

The calibration split is used whole (``--max-test-questions`` samples the test split
only, stratified by kind).

``--reader`` attaches the reader check (:class:`verityrag.checks.reader_check.ReaderCheck`) after
the other checks, at threshold 0 so that it scores every answer and blocks none; the
report's ``reader`` section then applies the threshold in its ``metadata.json`` to the
recorded scores. That is exact: the reader is the last stage, and it only ever turns an
answer into an abstention. The headline metrics are those without it. Without ``--reader`` the
reader check runs as the pipeline runs it for LLM answers: on, enforced, unless
``Settings.llm_reader_check`` is off (``config.reader_check`` in the report says which).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from verityrag.agent.controller import GROUNDING_THRESHOLDS
from verityrag.checks.registry import load_check, requested_checks
from verityrag.eval.metrics import contains_gold, percentiles, rate
from verityrag.eval.runner import (
    REPORT_SCHEMA_VERSION,
    EvalOptions,
    QuestionOutcome,
    _config,
    _progress,
    _versions,
    build_pipeline,
    summarise,
)
from verityrag.eval.sampling import stratified_sample
from verityrag.generation.llm import LLMGenerator, PromptStyle
from verityrag.generation.verified import AnswerStrategy, BestOfN, RejectAndRetry
from verityrag.llm import LOCAL_PROVIDERS, PROVIDERS, CompleteFn, complete_fn_for
from verityrag.serve.bundled_corpus import EvalQuestion, load_corpus, load_questions
from verityrag.types import QueryResult
from verityrag.verify.grounding_verifier import GroundingVerifier

#: Where the generated answers are written (git-ignored).
ANSWERS_DIR = Path(__file__).resolve().parents[2] / "guard_work" / "eval"

if TYPE_CHECKING:
    from verityrag.checks.reader_check import ReaderCheck

__all__ = [
    "LLMEvalOptions",
    "attempt_correct",
    "build_strategy",
    "llm_metrics",
    "prompt_style_of",
    "reader_metrics",
    "run_llm_eval",
]

Strategy = Literal["retry", "best-of-n"]
STRATEGIES: tuple[str, ...] = ("retry", "best-of-n")


@dataclass(frozen=True)
class LLMEvalOptions:
    provider: str
    base: EvalOptions
    strategy: Strategy = "retry"
    attempts: int = 3
    # For the offline providers ("local", "gemma"): the model's cache folder (default: the
    # provider's, e.g. ~/.cache/verityrag/qwen2.5-coder-0.5b-instruct).
    cache_dir: Path | None = None
    complete_fn: CompleteFn | None = None  # a ready provider instead of one built from ``provider``
    reader_hint: bool = False  # show the model the reader's span (LLMGenerator.reader_hint)


def prompt_style_of(complete_fn: CompleteFn) -> PromptStyle:
    """How ``complete_fn`` wants to be prompted: its ``prompt_style`` (the offline base model says
    ``"base"``), else ``"instruct"`` (every chat model)."""
    return "base" if getattr(complete_fn, "prompt_style", "instruct") == "base" else "instruct"


def build_strategy(
    complete_fn: CompleteFn,
    local: bool,
    strategy: Strategy,
    attempts: int,
    threshold: float,
    reader_hint: bool = False,
) -> AnswerStrategy:
    """The generator and verified strategy the eval uses for a provider.

    A small base model gets the ``base`` prompt, 3 evidence chunks (its context is the
    cost: ~150 tokens each) and one sentence; a small local chat model the ``instruct``
    prompt (with the worked example when the model asks for it: ``worked_example``), 3 chunks
    and at most 96 new tokens; a remote chat model the ``instruct`` prompt and 5. ``reader_hint``:
    the prompt shows the extractive reader's span as the likely answer.
    """
    if prompt_style_of(complete_fn) == "base":
        generator = LLMGenerator(
            complete_fn, style="base", max_evidence=3, max_tokens=48, max_sentences=1, reader_hint=reader_hint
        )
    elif local:
        generator = LLMGenerator(
            complete_fn,
            style="instruct",
            max_evidence=3,
            max_tokens=96,
            worked_example=bool(getattr(complete_fn, "worked_example", False)),
            reader_hint=reader_hint,
        )
    else:
        generator = LLMGenerator(
            complete_fn, style="instruct", max_evidence=5, max_tokens=200, reader_hint=reader_hint
        )
    verifier = GroundingVerifier(threshold=threshold)
    if strategy == "best-of-n":
        return BestOfN(generator, verifier, n=attempts, threshold=threshold, temperature=0.7)
    return RejectAndRetry(generator, verifier, max_attempts=attempts)


def run_llm_eval(options: LLMEvalOptions) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The report and one record per test question (its LLM attempts included)."""
    if options.provider not in PROVIDERS:
        from verityrag.errors import InvalidInputError

        raise InvalidInputError(
            "provider", f"unknown provider {options.provider!r}; choose one of {sorted(PROVIDERS)}"
        )
    base = options.base
    started = time.perf_counter()
    reader: ReaderCheck | None = None
    if base.reader:  # check the model folder before anything slow
        from verityrag.checks.reader_check import ReaderCheck

        reader = ReaderCheck.from_settings(base.settings).warm_up()
        reader_threshold = reader.threshold
        reader.threshold = 0.0  # score every answer; the threshold is applied in reader_metrics
    local = options.provider in LOCAL_PROVIDERS
    complete_fn: CompleteFn
    if options.complete_fn is not None:
        complete_fn = options.complete_fn
    elif local:
        complete_fn = LOCAL_PROVIDERS[options.provider](options.cache_dir)
    else:
        complete_fn = complete_fn_for(options.provider)
    load_s = 0.0
    warm_up = getattr(complete_fn, "warm_up", None)
    if callable(warm_up):  # load the model now, so its load time is not in the first answer's latency
        t0 = time.perf_counter()
        warm_up()
        load_s = time.perf_counter() - t0

    corpus = load_corpus(base.data_dir / "corpus.jsonl")
    calibration = load_questions(base.data_dir / "questions" / "calibration.jsonl")
    test_path = base.questions or base.data_dir / "questions" / "test.jsonl"
    test = load_questions(test_path)
    if base.max_test_questions is not None:
        test = stratified_sample(test, base.max_test_questions, base.seed)

    pipeline = build_pipeline(base)
    pipeline.ingest_documents(corpus, progress=base.progress)
    pipeline.train_reranker()
    fit_on = [q for q in calibration if q.kind != "unanswerable_in_domain"]
    calibration_result = pipeline.calibrate([(q.question, q.answers) for q in fit_on])
    threshold = GROUNDING_THRESHOLDS[base.settings.strictness]
    pipeline.answer_strategy = build_strategy(
        complete_fn, local, options.strategy, options.attempts, threshold, options.reader_hint
    )
    # The pipeline's own rule for LLM answers (its strategy is set only now, after calibrate, which
    # would otherwise call the LLM): a reader check the settings did not attach is attached here.
    requested = requested_checks(base.settings, llm_answers=True)
    if reader is not None:
        pipeline.attach_check("reader", reader, fixed_threshold=True)
        reader_check = "recorded at threshold 0 (--reader)"
    elif "reader" not in requested:
        reader_check = "off"
    elif pipeline.reader_check is not None:
        reader_check = "on (Settings.reader_check)"
    else:
        fixed = requested["reader"]
        pipeline.attach_check(
            "reader", load_check("reader", fixed, llm_answers=True, settings=base.settings), fixed is not None
        )
        reader_check = "on (the default for LLM answers)"

    outcomes: list[QuestionOutcome] = []
    records: list[dict[str, Any]] = []
    for q in _progress(test, f"llm eval ({options.provider})", base.progress):
        q0 = time.perf_counter()
        result = pipeline.query(q.question)
        latency = (time.perf_counter() - q0) * 1000
        outcome = QuestionOutcome.of(q, result, latency)
        outcomes.append(outcome)
        records.append(_record(q, result, outcome))

    report = {
        "schema_version": REPORT_SCHEMA_VERSION,
        "config": {
            **_config(base, pipeline, test_path),
            "provider": options.provider,
            "model": getattr(complete_fn, "model", ""),
            "strategy": options.strategy,
            "attempts": options.attempts,
            "reader_hint": options.reader_hint,
            "reader_check": reader_check,
            "verifier": f"GroundingVerifier(threshold={threshold})",
            "calibration": "whole calibration split (test split sampled only)",
        },
        "versions": _versions(),
        "seed": base.seed,
        "partial_sample": base.max_test_questions is not None,
        "timings_seconds": {"model_load": load_s, "total": time.perf_counter() - started},
        "calibration": {"questions": len(fit_on), "threshold": calibration_result.get("threshold")},
        "test": {"questions": len(outcomes), "by_kind": dict(Counter(o.kind for o in outcomes))},
        "metrics": summarise(outcomes),
        "llm": llm_metrics(records, options.attempts),
        "outcomes": [dataclasses.asdict(o) for o in outcomes],
    }
    if reader is not None:
        report["reader"] = reader_metrics(records, reader_threshold)
    return report, records


def _record(q: EvalQuestion, result: QueryResult, outcome: QuestionOutcome) -> dict[str, Any]:
    llm = next((s.details for s in result.trace if s.stage == "llm_generation"), None)
    given = set(llm["evidence"]) if llm else set()
    return {
        "id": q.id,
        "kind": q.kind,
        "question": q.question,
        "gold_answers": list(q.answers),
        "answered": outcome.answered,
        "answer": outcome.answer,
        "correct": outcome.correct,
        "abstain_reason": outcome.abstain_reason,
        "confidence": round(outcome.confidence, 4),
        "latency_ms": round(outcome.latency_ms, 1),
        "grounding_score": round(result.grounding.overall_score, 4),
        "reached_llm": llm is not None,
        "reader_score": next((float(s.details["score"]) for s in result.trace if s.stage == "reader"), None),
        "evidence": [
            {"n": n, "chunk_id": h.chunk_id, "title": h.chunk.title, "text": h.chunk.text}
            for n, h in enumerate((h for h in result.evidence if h.chunk_id in given), start=1)
        ],
        "llm": llm,
    }


def attempt_correct(record: dict[str, Any], attempt: dict[str, Any]) -> bool:
    """Whether an attempt's sentences hold a gold answer (never, for an unanswerable question)."""
    text = " ".join(s["text"] for s in attempt["sentences"])
    return bool(text) and bool(record["gold_answers"]) and contains_gold(text, record["gold_answers"])


def llm_metrics(records: Sequence[dict[str, Any]], max_attempts: int) -> dict[str, Any]:
    """What the LLM did and what the verifier caught, attempt by attempt.

    An attempt is *wrong* when its text holds no gold answer (every answer to an
    unanswerable question is wrong): the eval's proxy for "unsupported". *Caught* means
    the verifier rejected it.
    """
    reached = [r for r in records if r["reached_llm"]]
    by_attempt: dict[str, dict[str, int]] = {}
    for k in range(1, max_attempts + 1):
        row = Counter[str]()
        for r in reached:
            for a in r["llm"]["attempt_log"]:
                if a["attempt"] != k:
                    continue
                correct = attempt_correct(r, a)
                row["generated"] += 1
                row["refused"] += a["refused"]
                row["uncited_sentences"] += sum(not s["cites"] for s in a["sentences"])
                passed = all(v["supported"] for v in a["verdicts"]) and bool(a["verdicts"])
                row["passed_verifier"] += passed
                row["rejected"] += not passed and not a["refused"]
                row["wrong"] += not correct
                row["wrong_caught"] += not correct and not passed and not a["refused"]
                row["wrong_passed"] += not correct and passed
                row["correct_rejected"] += correct and not passed
                row["correct_passed"] += correct and passed
        by_attempt[str(k)] = {
            key: row[key]
            for key in (
                "generated",
                "passed_verifier",
                "rejected",
                "refused",
                "uncited_sentences",
                "wrong",
                "wrong_caught",
                "wrong_passed",
                "correct_rejected",
                "correct_passed",
            )
        }
    first = [r["llm"]["attempt_log"][0] for r in reached if r["llm"]["attempt_log"]]
    answerable_reached = [r for r in reached if r["gold_answers"]]
    firsts_answerable = [r["llm"]["attempt_log"][0] for r in answerable_reached if r["llm"]["attempt_log"]]
    accepted_at = Counter(str(r["llm"]["chosen_attempt"]) for r in reached if r["llm"]["accepted"])
    latencies = [r["latency_ms"] for r in reached]
    gen_ms = [a["generate_ms"] for r in reached for a in r["llm"]["attempt_log"]]
    tokens_out = [a["completion_tokens"] or 0 for r in reached for a in r["llm"]["attempt_log"]]
    tokens_in = [a["prompt_tokens"] or 0 for r in reached for a in r["llm"]["attempt_log"]]
    return {
        "questions": len(records),
        "reached_llm": len(reached),
        "reached_llm_by_kind": dict(Counter(r["kind"] for r in reached)),
        "accepted": sum(r["llm"]["accepted"] for r in reached),
        "accepted_at_attempt": dict(sorted(accepted_at.items())),
        "abstained_after_llm": dict(
            Counter(r["llm"]["abstain_reason"] for r in reached if not r["llm"]["accepted"])
        ),
        "attempts_used": dict(sorted(Counter(str(r["llm"]["attempts"]) for r in reached).items())),
        "by_attempt": by_attempt,
        # What the verifier bought: the first attempt taken as the answer, unchecked.
        "unverified_first_attempt": {
            "answered": len(first),
            "wrong": sum(
                not attempt_correct(r, r["llm"]["attempt_log"][0]) for r in reached if r["llm"]["attempt_log"]
            ),
            "answerable_correct": sum(
                attempt_correct(r, a) for r, a in zip(answerable_reached, firsts_answerable, strict=True)
            ),
            "answerable": len(answerable_reached),
        },
        "verified": {
            "answered": sum(r["answered"] for r in reached),
            "wrong": sum(r["answered"] and not r["correct"] for r in reached),
            "answerable_correct": sum(r["correct"] for r in answerable_reached),
        },
        "latency_ms_per_llm_question": percentiles(latencies),
        "generate_ms_per_attempt": percentiles(gen_ms),
        "tokens_per_attempt": {
            "prompt_mean": rate(sum(tokens_in), len(tokens_in)),
            "completion_mean": rate(sum(tokens_out), len(tokens_out)),
        },
        "completion_tokens_per_second": rate(sum(tokens_out), sum(gen_ms) / 1000) if gen_ms else 0.0,
    }


def reader_metrics(records: Sequence[dict[str, Any]], threshold: float) -> dict[str, Any]:
    """Answers with and without the reader check at ``threshold``, from the recorded scores.

    An answered question whose ``reader_score`` is under ``threshold`` would have abstained
    (reason ``reader``); nothing else changes, since the reader is the last stage.
    """

    def figures(kept: Sequence[dict[str, Any]]) -> dict[str, Any]:
        return {
            "answered": len(kept),
            "answered_wrong": sum(not r["correct"] for r in kept),
            "answerable_correct": sum(r["correct"] for r in kept),
            "answered_by_kind": dict(Counter(r["kind"] for r in kept)),
        }

    answered = [r for r in records if r["answered"]]
    kept = [r for r in answered if r["reader_score"] is None or r["reader_score"] >= threshold]
    return {
        "threshold": threshold,
        "threshold_source": "the reader's metadata.json (fitted on gemma-3-270m's HaluEval validation answers)",
        "answerable": sum(bool(r["gold_answers"]) for r in records),
        "without_reader": figures(answered),
        "with_reader": figures(kept),
    }


def write_answers(records: Sequence[dict[str, Any]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


def headline(report: dict[str, Any]) -> list[tuple[str, str]]:
    m, llm = report["metrics"], report["llm"]
    rows = [
        ("provider / model", f"{report['config']['provider']} / {report['config']['model']}"),
        ("test questions", str(report["test"]["questions"])),
        ("coverage (answerable answered)", f"{m['coverage']:.1%}"),
        ("answered and correct", f"{m['answered_and_correct']:.1%}"),
        ("accuracy of answered (answerable questions)", f"{m['accuracy_of_answered']:.1%}"),
    ]
    if "accuracy_of_all_answers" in m:  # reports before session 20 have none
        rows.append(("accuracy of all answers (to any question)", f"{m['accuracy_of_all_answers']:.1%}"))
    rows += [(f"correct abstention ({k})", f"{v:.1%}") for k, v in m["correct_abstention"].items()]
    rows += [
        ("questions reaching the LLM", str(llm["reached_llm"])),
        ("accepted at attempt", json.dumps(llm["accepted_at_attempt"])),
        (
            "wrong answers caught by attempt",
            ", ".join(
                f"{k}: {v['wrong_caught']}/{v['wrong']}"
                for k, v in llm["by_attempt"].items()
                if v["generated"]
            ),
        ),
        ("latency p50 per question (ms)", f"{m['latency_ms']['per_question']['p50']:.0f}"),
        ("latency p50 per LLM question (ms)", f"{llm['latency_ms_per_llm_question']['p50']:.0f}"),
    ]
    if "reader" in report:
        without, with_ = report["reader"]["without_reader"], report["reader"]["with_reader"]
        rows.append(
            (
                f"reader check at {report['reader']['threshold']:.3f}: answered / wrong / correct",
                f"{without['answered']} / {without['answered_wrong']} / {without['answerable_correct']} without, "
                f"{with_['answered']} / {with_['answered_wrong']} / {with_['answerable_correct']} with",
            )
        )
    return rows


def run_llm_cli(args: Any) -> int:
    """The ``--real-llm`` branch of ``python -m verityrag.eval`` (parsed ``args`` from its parser)."""
    import sys

    from verityrag.errors import VerityRAGError

    if args.llm_attempts < 1:
        print("error: --llm-attempts must be >= 1", file=sys.stderr)
        return 2
    if args.answerability or args.guard:
        # The LLM eval attaches no answerability gate or guard (only the reader check, measured
        # as a sweep point); refusing beats silently ignoring the flag.
        print("error: --answerability and --guard are not supported with --real-llm", file=sys.stderr)
        return 2
    base = EvalOptions.from_cli(args)
    options = LLMEvalOptions(
        args.real_llm, base, args.llm_strategy, args.llm_attempts, reader_hint=args.llm_reader_hint
    )
    try:
        report, records = run_llm_eval(options)
    except VerityRAGError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    run_name = args.real_llm + ("_reader_hint" if args.llm_reader_hint else "")
    out: Path = args.out
    if out == Path("eval_report.json"):  # the default: do not overwrite the main report
        out = Path(f"eval_report_llm_{run_name}.json")
    # The answers quote the questions and evidence (SQuAD text): kept out of the repository.
    answers = ANSWERS_DIR / f"llm_answers_{run_name}.jsonl"
    answers.parent.mkdir(parents=True, exist_ok=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    write_answers(records, answers)
    rows = headline(report)
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(f"written: {out}, {answers}")
    return 0
