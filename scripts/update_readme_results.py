"""Regenerate the figures in README.md and docs/results.md from eval_report*.json and scripts/results/*.json.

Every number in their results sections comes from here; none is typed by hand.
Sections are delimited by ``<!-- NAME:start -->`` / ``<!-- NAME:end -->`` markers.

    python scripts/update_readme_results.py          # rewrite both
    python scripts/update_readme_results.py --check  # exit 1 if either is stale
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from verityrag.eval.benchmarks import bm25s_table, index_table, learned_checks_table, scale_label, scale_table
from verityrag.eval.llm_checks_table import llm_checks_detail, llm_checks_summary
from verityrag.eval.report import headline_rows, reader_sweep_table

ROOT = Path(__file__).resolve().parent.parent

README = ROOT / "README.md"
RESULTS_PAGE = ROOT / "docs" / "results.md"
REPORTS = {
    "HashingEmbedder (default)": ROOT / "eval_report.json",
    "all-MiniLM-L6-v2 int8 ONNX (--real-embeddings)": ROOT / "eval_report_real_embeddings.json",
}
BENCH = ROOT / "scripts" / "results" / "bench_index.json"
#: The user-domain benchmark's reports (``python -m verityrag.eval --domains``), by split.
DOMAIN_REPORTS = {
    "dev": ROOT / "eval_report_domains_dev.json",
    "test": ROOT / "eval_report_domains_test.json",
}
MULTIHOP_REPORTS = {
    "shipped defaults": ROOT / "eval_report_multihop_heldout.json",
    "`VERITYRAG_MAX_HOPS=2`": ROOT / "eval_report_multihop_heldout_hops2.json",
}
SCALE = ROOT / "scripts" / "results" / "bench_scale.json"
BM25S = ROOT / "scripts" / "results" / "bench_bm25s.json"


#: The reader thresholds README's sweep shows (the chosen one is always shown).
README_SWEEP = (0.0, 0.5, 0.9, 0.98, 0.99)


def eval_section() -> str:
    reports = {name: json.loads(p.read_text()) for name, p in REPORTS.items() if p.exists()}
    if not reports:
        return "_No eval_report.json yet: run `make eval`._"
    names = list(reports)
    rows = {name: dict(headline_rows(r)) for name, r in reports.items()}
    figures = list(rows[names[0]])
    lines = ["| figure | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(names)]
    for fig in figures:
        lines.append(f"| {fig} | " + " | ".join(rows[n].get(fig, "n/a") for n in names) + " |")
    # What decides the default embedder beside quality: the cost of making a document searchable.
    per_doc = [1000 * r["corpus"]["ingest_seconds"] / r["corpus"]["documents"] for r in reports.values()]
    lines.append(
        "| ingest per document (bundled corpus, bulk) | "
        + " | ".join(f"{ms:.1f} ms" for ms in per_doc)
        + " |"
    )
    first = reports[names[0]]
    lines += ["", "Where the answerable test questions went (failure analysis by category):", ""]
    lines += ["| category | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(names)]
    for cat in first["metrics"]["answerable_failure_analysis"]:
        counts = [
            str(r["metrics"].get("answerable_failure_analysis", {}).get(cat, "n/a")) for r in reports.values()
        ]
        lines.append(f"| {cat.replace('_', ' ')} | " + " | ".join(counts) + " |")
    lines.append("")
    # Each column's own run: one sentence when they agree, one per column when they differ
    # (a partial sample or another seed in the second report must not pass under the first's).
    runs = {name: _run_description(r) for name, r in reports.items()}
    if len(set(runs.values())) == 1:
        described = f"Test split: {runs[names[0]]}"
    else:
        described = " ".join(f"Test split, {name}: {run}" for name, run in runs.items())
    lines.append(
        described
        + (
            " Brackets: 95% Wilson interval of each rate (its sampling error over these questions)."
            if "intervals_95" in first["metrics"]
            else ""
        )
    )
    if "reader_sweep" in first:
        sweep = first["reader_sweep"]
        lines += [
            "",
            f"The reader's threshold, {names[0]}: {sweep['threshold_rule']}; what others give on the "
            "test split (every threshold, and on calibration: eval_report.md):",
            "",
            *reader_sweep_table(sweep, only=README_SWEEP),
        ]
    return "\n".join(lines)


def _run_description(report: dict[str, Any]) -> str:
    """What one report's figures were measured on: questions, corpus, seed, partial sample."""
    return (
        f"{report['test']['questions']} questions ("
        + ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in sorted(report["test"]["by_kind"].items()))
        + f"); corpus {report['corpus']['documents']} documents / {report['corpus']['chunks']} chunks; "
        f"seed {report['seed']}; thresholds chosen on the calibration split only."
        + (" **Partial sample.**" if report["partial_sample"] else "")
    )


def _benchmark(path: Path) -> tuple[dict[str, Any], str] | None:
    """A benchmark script's JSON and the "Measured ..." lead; None if not run yet."""
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    lead = f"Measured {data['date']} on {data['machine']}, Python {data['python']}"
    return data, lead


def domains_section() -> str:
    from verityrag.eval.domains import domains_table

    reports = {split: json.loads(p.read_text()) for split, p in DOMAIN_REPORTS.items() if p.exists()}
    if not reports:
        return "_No user-domain report yet: `make eval-domains`._"
    return domains_table(reports)


def multihop_section() -> str:
    from verityrag.eval.multihop import multihop_table

    reports = {name: json.loads(p.read_text()) for name, p in MULTIHOP_REPORTS.items() if p.exists()}
    if not reports:
        return "_No multi-hop report yet: `make eval-multihop`._"
    return multihop_table(reports)


def bench_section() -> str:
    bench = _benchmark(BENCH)
    if bench is None:
        return "_No benchmark output yet: run `make bench`._"
    data, lead = bench
    return lead + (" (quick mode)" if data.get("quick") else "") + ":\n\n```\n" + index_table(data) + "\n```"


def scale_section() -> str:
    """The index at 100k, 300k and 1M chunks, and the BM25 engines a user would pick instead."""
    if not SCALE.exists():
        return "_No scripts/results/bench_scale.json yet: run `make bench-scale`._"
    data: dict[str, Any] = json.loads(SCALE.read_text())
    lead = f"Measured {data['date']} on {data['machine']}, Python {data['python']}"
    if data.get("training_running"):
        lead += " **while a model trained on both cores: slower and noisier than a quiet machine**"
    if data.get("restart_run"):
        lead += f" (the rebuild, image and restart rows: {data['restart_run']})"
    dates = {s: e.get("measured") for s, e in data["scales"].items()}
    if len({d for d in dates.values() if d}) > 1:  # a column added later (bench_scale.py --merge)
        when = ", ".join(
            f"{scale_label(int(s))} {d}" for s, d in sorted(dates.items(), key=lambda i: int(i[0]))
        )
        lead += f"; the columns measured at {when}"
    return lead + ":\n\n" + scale_table(data)


def bm25s_section() -> str:
    """BM25 top-10 against bm25s, the passes of each interleaved."""
    if not BM25S.exists():
        return "_No scripts/results/bench_bm25s.json yet: run `make bench-bm25s`._"
    data: dict[str, Any] = json.loads(BM25S.read_text())
    rounds = {c.get("rounds") for c in data["scales"].values()}
    return (
        f"Measured {data['date']} on {data['machine']}, Python {data['python']}, "
        f"{'/'.join(str(r) for r in sorted(rounds))} rounds of a pass over the 550 test questions each, "
        "alternating; medians over the rounds:\n\n" + bm25s_table(data)
    )


RAGTRUTH = ROOT / "eval_report_ragtruth.json"


def ragtruth_section() -> str:
    if not RAGTRUTH.exists():
        return "_No eval_report_ragtruth.json yet: run `.venv/bin/python -m verityrag.eval --ragtruth`._"
    from verityrag.eval.ragtruth import render_table

    return render_table(json.loads(RAGTRUTH.read_text()))


READER_CHECK = ROOT / "scripts" / "results" / "reader_check.json"
SPAN_READER = ROOT / "scripts" / "results" / "reader.json"
SPAN_READER_METADATA = ROOT / "verityrag" / "resources" / "reader" / "metadata.json"
LLM_READER = ROOT / "scripts" / "results" / "llm_eval_reader_local.json"


def span_reader_section() -> str:
    """The extractive reader on its own, with the gold paragraph given (``python -m verityrag.train reader``)."""
    if not SPAN_READER.exists():
        return "_No scripts/results/reader.json yet: run `make train-reader`._"
    data: dict[str, Any] = json.loads(SPAN_READER.read_text())
    m, t = data["metrics"], data["training"]
    lines = [
        "| questions (gold paragraph given) | n | EM | F1 | answerability AUROC | SQuAD 2.0 F1 (has answer / no answer) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    names = {
        "squad11_dev_without_split_a": "SQuAD 1.1 dev (32 articles never trained on)",
        "squad2_dev_split_b": "SQuAD 2.0 dev split_b (19 articles never trained on)",
        "validation": "validation (2 SQuAD 2.0 dev articles; threshold chosen here)",
    }
    for key, name in names.items():
        if key not in m:
            continue
        r = m[key]
        squad2 = r.get("squad2")
        auroc = f"{r['answerability_auroc']:.3f}" if "answerability_auroc" in r else "-"
        s2 = (
            f"{squad2['f1']:.1f} ({squad2['has_answer_f1']:.1f} / {squad2['no_answer_accuracy']:.1f})"
            if squad2
            else "-"
        )
        lines.append(
            f"| {name} | {r['questions']} | {r['span']['exact_match']:.1f} | {r['span']['f1']:.1f} | {auroc} | {s2} |"
        )
    size = t.get("file_bytes", {}).get("model.int8.onnx", 0) / 1e6
    trained_on = (
        json.loads(SPAN_READER_METADATA.read_text())["data"]["train"] if SPAN_READER_METADATA.exists() else {}
    )
    kinds = trained_on.get("by_kind", {})
    without = sum(n for kind, n in kinds.items() if kind != "answerable")
    if t.get("checkpoint_step"):  # a checkpoint exported before the planned epochs were done
        step, total = t["checkpoint_step"], t["total_steps"]
        how_long = (
            f"for {step:,} of the {total:,} steps of a {t['epochs']}-epoch run "
            f"({t['epochs'] * step / total:.2f} epochs, before the learning rate decayed: the exported "
            "checkpoint, as the full run did not fit its time)"
        )
        where = f"on {t['device']}, bfloat16 {'on' if t['bf16_autocast'] else 'off'}"
    elif "min at" in str(t.get("plan", "")):  # steps planned to end inside a time budget
        windows = t["encoding"]["windows"]
        how_long = (
            f"for {t['total_steps']:,} steps of {t['batch_size']} windows "
            f"({t['total_steps'] * t['batch_size'] / windows:.2f} epochs of {windows:,}), planned to end inside "
            f"a time budget (learning rate {t['learning_rate']:g}, warm-up, then linear decay to "
            f"{t['final_learning_rate']:g} at the last step; plan: {t['plan']})"
        )
        where = (
            f"{t['train_seconds'] / 3600:.1f} h on {t['device']}, "
            f"bfloat16 {'on' if t['bf16_autocast'] else 'off'}, torch.compile {'on' if t.get('compiled') else 'off'}"
        )
    else:
        how_long = f"{t['epochs']} epochs"
        where = (
            f"{t['train_seconds'] / 3600:.1f} h on {t['device']}, "
            f"bfloat16 {'on' if t['bf16_autocast'] else 'off'}"
        )
    lines += [
        "",
        f"all-MiniLM-L6-v2 fine-tuned {how_long} on {trained_on.get('examples', 0):,} examples "
        f"({kinds.get('answerable', 0):,} with their answer, {without:,} without: SQuAD 2.0's own "
        f"unanswerable questions, each given twice ({kinds.get('unanswerable', 0):,} in all), and ones made here by editing "
        "the question, giving another paragraph of the article or removing the answer's sentence) "
        f"({where}); "
        f"served as int8 ONNX ({size:.1f} MB), {m['validation']['ms_per_question']:.0f} ms per paragraph here. "
        "EM and F1 score the best span whatever the no-answer score; AUROC ranks answerable above "
        "unanswerable by the reader's answer probability; SQuAD 2.0 scores answer only above the "
        f"validation threshold ({data['threshold']:.3f}).",
    ]
    return "\n".join(lines)


def reader_check_section() -> str:
    """The reader check against Verity-Guard on gemma's labelled test answers (python -m verityrag.train reader-check)."""
    if not READER_CHECK.exists():
        return "_No scripts/results/reader_check.json yet: run `make models-reader`._"
    data: dict[str, Any] = json.loads(READER_CHECK.read_text())
    test = data["test"]
    n = test["answers"]

    def pct(x: float) -> str:
        return f"{100 * x:.1f}%"

    lines = [
        f"gemma-3-270m's answers to HaluEval test questions, {sum(n.values())} of them labelled against the "
        f"gold answer: {n['right']} right, "
        f"{n['wrong_but_grounded']} wrong but made of evidence words, {n['wrong_ungrounded']} wrong with "
        "words from outside the evidence. AUROC separates right from wrong; the operating points use "
        f"the thresholds fitted on validation answers (reader {data['threshold']:.3f}, guard "
        f"{data['guard_threshold']:.3f}).",
        "",
        "| check | AUROC, right vs all wrong | vs wrong-but-grounded | vs wrong-ungrounded "
        "| right flagged | wrong-but-grounded caught | wrong-ungrounded caught |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    names = {
        "guard": "Verity-Guard (gemma threshold)",
        "reader": "reader check",
        "guard_then_reader": "guard, then reader",
    }
    for key, name in names.items():
        auroc = test["auroc"].get(key)
        cells = (
            [
                f"{auroc[k]:.3f}"
                for k in ("right_vs_all_wrong", "right_vs_wrong_but_grounded", "right_vs_wrong_ungrounded")
            ]
            if auroc
            else ["-", "-", "-"]
        )
        point = test["at_threshold"][key]
        cells += [
            pct(point["right_flagged"]),
            pct(point["wrong_but_grounded_caught"]),
            pct(point["wrong_ungrounded_caught"]),
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    latency = data["latency_ms_per_answer"]
    lines += [
        "",
        f"Reader check latency p50 {latency['p50']:.1f} ms / p95 {latency['p95']:.1f} ms per answer (int8 ONNX, 2 threads).",
    ]
    if LLM_READER.exists():
        lines += ["", *llm_reader_lines(json.loads(LLM_READER.read_text()))]
    return "\n".join(lines)


def llm_reader_lines(report: dict[str, Any]) -> list[str]:
    """The main eval's test split with gemma writing the answers, without and with the reader check."""
    reader = report["reader"]
    n = report["test"]["by_kind"]
    lines = [
        f"The main eval's test split ({report['test']['questions']} questions) with gemma-3-270m writing the "
        "answers (`.venv/bin/python -m verityrag.eval --real-llm gemma --reader`, output in "
        f"`scripts/results/{LLM_READER.name}`), without and with the reader check at "
        f"{reader['threshold']:.3f}"
        + (
            f" (answers generated once; reader scores recomputed for the current reader by "
            f"`{reader['rescored']['by']}`)"
            if "rescored" in reader
            else ""
        )
        + ":",
        "",
        "| answers | answered | wrong | correct (of answerable) | answerable answered | in-domain unanswerable answered |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for key, name in (
        ("without_reader", "without the reader check"),
        ("with_reader", "with the reader check"),
    ):
        f = reader[key]
        by_kind = f["answered_by_kind"]
        lines.append(
            f"| {name} | {f['answered']} | {f['answered_wrong']} | {f['answerable_correct']} of {reader['answerable']} "
            f"| {by_kind.get('answerable', 0)} | {by_kind.get('unanswerable_in_domain', 0)} of "
            f"{n.get('unanswerable_in_domain', 0)} |"
        )
    return lines


CHECKS_BENCH = ROOT / "scripts" / "results" / "bench_learned_checks.json"


def learned_checks_section() -> str:
    bench = _benchmark(CHECKS_BENCH)
    if bench is None:
        return "_No benchmark output yet: run `make bench-checks`._"
    data, lead = bench
    return f"{lead}, {data['questions']} test questions (`make bench-checks`):\n\n" + learned_checks_table(
        data
    )


LLM_CHECKS = ROOT / "scripts" / "results" / "llm_checks_local.json"


def _llm_checks(render: Any) -> str:
    if not LLM_CHECKS.exists():
        return "_No scripts/results/llm_checks_local.json yet: run `make eval-llm eval-llm-checks`._"
    return str(render(json.loads(LLM_CHECKS.read_text())))


def llm_checks_section() -> str:
    """The checks on the local instruct model's answers, and the LLM path beside the extractive one."""
    return _llm_checks(llm_checks_summary)


def llm_checks_detail_section() -> str:
    return _llm_checks(llm_checks_detail)


#: The sections of each page, by marker name.
PAGES = {
    README: (
        ("eval-results", eval_section),
        ("domain-results", domains_section),
        ("multihop-results", multihop_section),
        ("reader-results", span_reader_section),
        ("scale-results", scale_section),
        ("bm25s-results", bm25s_section),
        ("llm-checks-results", llm_checks_section),
    ),
    RESULTS_PAGE: (
        ("ragtruth-results", ragtruth_section),
        ("reader-check-results", reader_check_section),
        ("learned-checks-results", learned_checks_section),
        ("llm-checks-detail", llm_checks_detail_section),
        ("bench-results", bench_section),
    ),
}


def render(text: str, page: Path = README) -> str:
    for name, section in PAGES[page]:
        pattern = re.compile(rf"(<!-- {name}:start -->).*?(<!-- {name}:end -->)", re.S)
        if not pattern.search(text):
            raise SystemExit(f"{page.name} lacks the <!-- {name}:start/end --> markers")
        body = section()
        text = pattern.sub(lambda m, b=body: f"{m.group(1)}\n{b}\n{m.group(2)}", text)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="fail if README.md is not up to date")
    args = parser.parse_args(argv)
    stale = []
    for page in PAGES:
        current = page.read_text(encoding="utf-8")
        updated = render(current, page)
        if updated == current:
            continue
        stale.append(page.name)
        if not args.check:
            page.write_text(updated, encoding="utf-8")
    if args.check:
        if stale:
            print(f"{', '.join(stale)} figures are stale: run `make readme-results`", file=sys.stderr)
            return 1
        return 0
    print(f"results updated: {', '.join(stale) or 'nothing changed'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
