"""``python -m verityrag.eval``: the evaluation CLI. Writes eval_report.json, eval_report.md and plots."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

from verityrag.config import BACKENDS, PROFILES, Settings
from verityrag.errors import VerityRAGError
from verityrag.eval.report import headline_rows, render_markdown, write_json, write_plots
from verityrag.eval.runner import EvalOptions, run_eval
from verityrag.llm import PROVIDERS
from verityrag.serve.bundled_corpus import DEFAULT_DATA_DIR


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m verityrag.eval",
        description="Ingest the bundled SQuAD corpus, calibrate on the calibration split, "
        "answer the test split, and report coverage, accuracy, abstention, risk-coverage and latency.",
    )
    p.add_argument("--real-embeddings", action="store_true", help="use all-MiniLM-L6-v2 instead of hashing")
    p.add_argument(
        "--embedding-backend",
        choices=("onnx-int8", "torch"),
        default="onnx-int8",
        help="with --real-embeddings: int8 ONNX (default; ~4 ms per query here) or torch (~12 ms)",
    )
    p.add_argument(
        "--without-reader",
        action="store_true",
        help="answer with the sentence selector's sentence, without the extractive reader",
    )
    p.add_argument("--guard", action="store_true", help="add the learned guard after grounding")
    p.add_argument("--answerability", action="store_true", help="add the learned answerability gate")
    p.add_argument(
        "--reader",
        action="store_true",
        help="add the reader check after the guard (does the answer say what an extractive reader finds?)",
    )
    p.add_argument("--answerability-threshold", type=float, default=None, metavar="X")
    p.add_argument(
        "--real-llm",
        metavar="PROVIDER",
        default=None,
        choices=tuple(PROVIDERS),
        help="generate with an LLM: local (offline Qwen2.5-Coder-0.5B-Instruct), gemma (offline "
        "gemma-3-270m, a base model), gemini, anthropic, openai (-compatible)",
    )
    p.add_argument("--llm-strategy", choices=("retry", "best-of-n"), default="retry")
    p.add_argument("--llm-attempts", type=int, default=3, metavar="N", help="LLM tries or candidates")
    p.add_argument(
        "--llm-reader-hint",
        action="store_true",
        help="show the LLM the extractive reader's span as the likely answer",
    )
    p.add_argument("--max-test-questions", type=int, default=None, metavar="N", help="stratified sample")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--profile", choices=PROFILES, default="default")
    p.add_argument(
        "--backend",
        choices=BACKENDS,
        default="embedded",
        help="index backend; elasticsearch uses ELASTICSEARCH_URL, or starts the noida-db emulator when unset",
    )
    p.add_argument("--questions", type=Path, default=None, metavar="PATH", help="external JSONL to evaluate")
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR, help="folder with corpus.jsonl")
    p.add_argument("--out", type=Path, default=Path("eval_report.json"), metavar="PATH")
    p.add_argument(
        "--plots-dir",
        type=Path,
        default=None,
        metavar="PATH",
        help="folder for the PNG plots (default: beside --out, named after it: "
        "eval_report_plots/ for eval_report.json)",
    )
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument(
        "--per-article",
        action="store_true",
        help="ask each SQuAD 2.0 dev split_b article's questions of a fresh pipeline holding that article "
        "alone (shipped defaults, no calibration; writes eval_report_per_article.json unless --out is given)",
    )
    p.add_argument(
        "--max-articles", type=int, default=None, metavar="N", help="with --per-article: the first N"
    )
    p.add_argument(
        "--articles",
        choices=("test", "validation"),
        default="test",
        help="with --per-article: split_b (test, the default) or the reader's two validation articles "
        "(where a setting may be chosen)",
    )
    p.add_argument(
        "--domains",
        type=Path,
        default=None,
        metavar="DIR",
        help="ask each domain of DIR (one JSON file each, as ../shared/domains) of a fresh pipeline holding "
        "it alone and beside the bundled corpus as `make run` serves it (writes "
        "eval_report_domains_<DIR's name>.json unless --out is given)",
    )
    p.add_argument(
        "--domain-modes",
        default="alone,beside",
        metavar="MODES",
        help="with --domains: alone, beside, or both (comma-separated; default both)",
    )
    p.add_argument(
        "--multihop",
        choices=("dev", "heldout"),
        default=None,
        metavar="SLICE",
        help="ask HotpotQA questions that need two documents (HaluEval QA items: dev 7500-7999, heldout "
        "8000-9999) of a fresh pipeline holding every item's paragraphs, then each with its answer's "
        "paragraph removed (writes eval_report_multihop_<SLICE>.json unless --out is given; "
        "--max-test-questions N: the first N)",
    )
    p.add_argument(
        "--ragtruth",
        action="store_true",
        help="score verifiers on RAGTruth-QA and HaluEval-QA instead "
        "(writes eval_report_ragtruth.json unless --out is given)",
    )
    p.add_argument(
        "--verifier",
        action="append",
        metavar="NAME",
        help="with --ragtruth: lexical, tfidf-lr, grounding, guard:<folder>, nli:<folder>, onnx:<folder>, "
        "hf:<model>, lettuce:<model>, "
        "hhem:<model>, minicheck:<model>, ens-min|mean|max (repeat or comma-separate; default: all)",
    )
    return p


def default_plots_dir(out: Path) -> Path:
    """Where the plots go without ``--plots-dir``: beside the report, named after it
    (``/tmp/x_plots`` for ``--out /tmp/x.json``)."""
    return out.with_name(f"{out.stem}_plots")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    if args.answerability_threshold is not None and not args.answerability:
        parser.error("--answerability-threshold only applies with --answerability")
    if args.max_test_questions is not None and args.max_test_questions < 1:
        parser.error("--max-test-questions must be >= 1")
    if args.verifier and not args.ragtruth:
        parser.error("--verifier only applies with --ragtruth")
    if (args.max_articles is not None or args.articles != "test") and not args.per_article:
        parser.error("--max-articles and --articles only apply with --per-article")
    if args.per_article and (args.ragtruth or args.real_llm or args.questions or args.max_test_questions):
        parser.error(
            "--per-article asks every question of each article (--max-articles to ask fewer): "
            "not with --ragtruth, --real-llm, --questions or --max-test-questions"
        )
    if args.ragtruth:
        # The verifier benchmark has its own data and no agent: these options would be ignored.
        ignored = [
            flag
            for flag, value in (
                ("--questions", args.questions),
                ("--max-test-questions", args.max_test_questions),
                ("--real-llm", args.real_llm),
                ("--answerability", args.answerability),
                ("--guard", args.guard),
                ("--reader", args.reader),
                ("--real-embeddings", args.real_embeddings),
            )
            if value
        ]
        if ignored:
            parser.error(f"--ragtruth does not take {', '.join(ignored)}")
    if args.out.is_dir():
        parser.error(
            f"--out {args.out} is a folder: give a file path such as {args.out / 'eval_report.json'}"
        )
    if not (args.ragtruth or args.real_llm) and args.out.suffix == ".md":
        parser.error(f"--out {args.out} is the JSON report's path: the Markdown one goes beside it as .md")
    try:  # before the run, not after minutes of it
        args.out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        parser.error(f"--out {args.out}: cannot create its folder ({exc.strerror})")
    # The plots are written before the JSON: a bad folder found after the run lost the report.
    plots_dir: Path = args.plots_dir or default_plots_dir(args.out)
    if not (
        args.ragtruth or args.real_llm or args.per_article or args.domains or args.multihop or args.no_plots
    ):
        try:
            plots_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            parser.error(f"--plots-dir {plots_dir}: cannot create the folder ({exc.strerror})")
    if args.domains is not None:
        return _domains(args, parser)
    if args.multihop is not None:
        return _multihop(args, parser)
    if args.per_article:
        return _per_article(args)
    if args.ragtruth:
        from verityrag.eval.ragtruth import main_from_args

        return main_from_args(args)
    if args.real_llm:
        from verityrag.eval.llm_eval import run_llm_cli

        return run_llm_cli(args)
    options = EvalOptions.from_cli(args)
    try:
        report = run_eval(options)
    except VerityRAGError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out: Path = args.out
    plots: dict[str, str] = {}
    if not args.no_plots:
        plots = write_plots(report, plots_dir, relative_to=out.parent)
    report["plots"] = plots
    write_json(report, out)
    md_path = out.with_suffix(".md")
    md_path.write_text(render_markdown(report, plots), encoding="utf-8")
    width = max(len(name) for name, _ in headline_rows(report))
    for name, value in headline_rows(report):
        print(f"{name:<{width}}  {value}")
    print(
        f"written: {out}, {md_path}"
        + (f", plots in {Path(next(iter(plots.values()))).parent}" if plots else "")
    )
    return 0


def _settings_of(args: argparse.Namespace) -> Settings:
    """The settings a fresh pipeline of --domains, --multihop or --per-article gets, as a user's:
    the profile, the environment's VERITYRAG_* settings over it, the reader unless --without-reader."""
    return Settings.from_env({**os.environ, "VERITYRAG_PROFILE": args.profile}).replace(
        reader=not args.without_reader
    )


def _write_and_say(report: dict[str, Any], out: Path, rows: list[tuple[str, str]]) -> int:
    """Write ``report`` to ``out`` and print its headline ``rows``, aligned."""
    write_json(report, out)
    width = max(len(row) for row, _ in rows)
    for row, value in rows:
        print(f"{row:<{width}}  {value}")
    print(f"written: {out}")
    return 0


def _domains(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from verityrag.eval.domains import MODES, headline, run_domains

    if args.per_article or args.ragtruth or args.real_llm or args.questions or args.max_test_questions:
        parser.error(
            "--domains asks every question of each domain: not with --per-article, --ragtruth, "
            "--real-llm, --questions or --max-test-questions"
        )
    modes = [m.strip() for m in args.domain_modes.split(",") if m.strip()]
    if not modes or any(m not in MODES for m in modes):
        parser.error(f"--domain-modes: give {' or '.join(MODES)}, comma-separated")
    try:
        report = run_domains(args.domains, _settings_of(args), modes, progress=not args.no_progress)
    except VerityRAGError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    name = args.domains.resolve().name
    out = Path(f"eval_report_domains_{name}.json") if str(args.out) == "eval_report.json" else args.out
    return _write_and_say(report, out, headline(report))


def _multihop(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from verityrag.datasets import HALUEVAL_QA, dataset_file
    from verityrag.eval.multihop import headline, run_multihop

    if args.per_article or args.ragtruth or args.real_llm or args.questions:
        parser.error(
            "--multihop asks its own questions: not with --per-article, --ragtruth, --real-llm or --questions"
        )
    try:
        path = dataset_file(HALUEVAL_QA)
        report = run_multihop(
            path, _settings_of(args), args.multihop, args.max_test_questions, not args.no_progress
        )
    except VerityRAGError as exc:  # DatasetMissingError is one
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = (
        Path(f"eval_report_multihop_{args.multihop}.json")
        if str(args.out) == "eval_report.json"
        else args.out
    )
    return _write_and_say(report, out, headline(report))


def _per_article(args: argparse.Namespace) -> int:
    from verityrag.eval.per_article import DEFAULT_OUT, run_per_article

    report = run_per_article(
        _settings_of(args), args.max_articles, progress=not args.no_progress, article_set=args.articles
    )
    out = Path(DEFAULT_OUT) if str(args.out) == "eval_report.json" else args.out
    write_json(report, out)
    m = report["metrics"]
    print(
        f"{len(report['articles'])} articles, {m['questions']} questions: coverage {m['coverage']:.1%}, "
        f"answered and correct {m['answered_and_correct']:.1%}, unanswerable abstention "
        f"{m['unanswerable_abstention']:.1%}, accuracy of all answers {m['accuracy_of_all_answers']:.1%}, "
        f"ECE of confidence {report['confidence_calibration']['ece']:.3f}, decision AUROC "
        f"{report['decision_auroc'] or float('nan'):.3f}, "
        f"p50 / p95 {report['latency_ms']['p50']:.1f} / {report['latency_ms']['p95']:.1f} ms"
    )
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
