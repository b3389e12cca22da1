"""Markdown tables of :mod:`verityrag.eval.llm_checks`'s report (README and docs/results.md)."""

from __future__ import annotations

from typing import Any

__all__ = ["llm_checks_detail", "llm_checks_summary"]


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _point(p: dict[str, Any]) -> str:
    return (
        f"{p['wrong_caught']}/{p['wrong']} ({_pct(p['wrong_caught_rate'])}) | "
        f"{p['right_rejected']}/{p['right']} ({_pct(p['right_rejected_rate'])})"
    )


def _path(p: dict[str, Any]) -> str:
    return f"{p['answered']} / {p['answered_wrong']} / {_pct(p['accuracy_of_all_answers'])}"


def _lead(data: dict[str, Any]) -> str:
    kinds = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in data["by_kind"].items())
    return (
        f"{data['model']} writing the answers to the main eval's test split ({data['test_questions']} "
        f"questions; `make eval-llm`), scored by `make eval-llm-checks` on {data['date']}: "
        f"{data['first_attempts']} first answers ({kinds}), {data['right']} right."
    )


def llm_checks_summary(data: dict[str, Any]) -> str:
    """Each check alone at its own threshold, and the LLM path with it, beside the extractive path."""
    lat = data["latency"]["per_llm_question_ms"]
    none = data["llm_path_without_checks"]
    lines = [
        _lead(data),
        "",
        "| check (own threshold) | AUROC right vs wrong | wrong caught | right rejected "
        "| LLM path with it: answered / wrong / accuracy of all answers |",
        "| --- | --- | --- | --- | --- |",
        f"| none (the path as run: grounding at {data['strictness']}) | - | - | - | {_path(none)} |",
    ]
    for row in data["rows"]:
        if len(row["checks"]) == 1:
            lines.append(
                f"| {row['checks'][0]} ({row['threshold']:.2f}) | {row['auroc']:.3f} | {_point(row['own'])} "
                f"| {_path(row['own']['llm_path'])} |"
            )
    extractive = data.get("extractive_path")
    tail = (
        f"; the extractive path: accuracy of all answers {_pct(extractive['accuracy_of_all_answers'])}, "
        f"p50 / p95 {extractive['latency_ms']['p50']:.0f} / {extractive['latency_ms']['p95']:.0f} ms"
        if extractive
        else ""
    )
    lines += [
        "",
        f"LLM path latency per question that reached the LLM: p50 {lat['p50'] / 1000:.1f} s, "
        f"p95 {lat['p95'] / 1000:.1f} s{tail}. Cross-fitted thresholds, stacks and strictness levels: "
        "docs/results.md.",
    ]
    return "\n".join(lines)


def _best_stacks(rows: list[dict[str, Any]], budget: float, k: int) -> tuple[list[dict[str, Any]], bool]:
    """The ``k`` stacks that catch most wrong answers cross-fitted, among those within ``budget`` when
    any is (second: whether any is)."""
    stacks = [r for r in rows if len(r["checks"]) > 1]
    within = [r for r in stacks if r["cross_fitted"]["right_rejected_rate"] <= budget]
    best = sorted(
        within or stacks,
        key=lambda r: (-r["cross_fitted"]["wrong_caught"], r["cross_fitted"]["right_rejected"]),
    )
    return best[:k], bool(within)


def llm_checks_detail(data: dict[str, Any], top_stacks: int = 5) -> str:
    """Cross-fitted operating points, the best stacks and what each strictness level drops."""
    budget = data["right_rejected_budget"]
    lines = [
        _lead(data),
        "",
        "Each check and stack at its own threshold (the model folder's; the pipeline's for grounding; "
        "a fixed 0.5 where none is recorded) and *cross-fitted* (the threshold chosen on the other half "
        f"of the questions to reject at most {_pct(budget)} of right answers there). An answer passes a "
        "stack when it passes every member.",
        "",
        "| check or stack | own: wrong caught | right rejected | cross-fitted: wrong caught | right rejected "
        "| LLM path, cross-fitted: answered / wrong / accuracy |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    singles = [r for r in data["rows"] if len(r["checks"]) == 1]
    stacks, any_within = _best_stacks(data["rows"], budget, top_stacks)
    for row in [*singles, *stacks]:
        lines.append(
            f"| {' + '.join(row['checks'])} | {_point(row['own'])} | {_point(row['cross_fitted'])} "
            f"| {_path(row['cross_fitted']['llm_path'])} |"
        )
    lines += [
        "",
        f"Stacks shown: the {len(stacks)} of the {sum(len(r['checks']) > 1 for r in data['rows'])} scored that catch "
        "most wrong answers cross-fitted"
        + (
            f" within the {_pct(budget)} budget"
            if any_within
            else f" (none is within the {_pct(budget)} budget)"
        )
        + " (chosen on these answers: optimistic). Skipped, for want of their model: "
        + ("; ".join(s.split(":")[0] for s in data["skipped"]) or "none")
        + ".",
        "",
        "The grounding verifier's recorded sentence scores under each strictness level (first answers):",
        "",
        "| level | threshold | sentences dropped | right: whole / trimmed / refused | right that lost their gold "
        "| wrong: whole / trimmed / refused |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for level, t in data["strictness_levels"].items():

        def side(name: str, t: dict[str, Any] = t) -> str:
            return " / ".join(str(t.get(f"{name}_{what}", 0)) for what in ("whole", "trimmed", "refused"))

        lines.append(
            f"| {level} | {t['threshold']:.2f} | {t['sentences_dropped']} of {t['sentences']} | {side('right')} "
            f"| {t.get('right_lost_gold', 0)} | {side('wrong')} |"
        )
    return "\n".join(lines)
