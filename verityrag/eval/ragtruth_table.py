"""The README table of the RAGTruth report: one row per verifier, RAGTruth then HaluEval figures."""

from __future__ import annotations

from typing import Any


def render_table(report: dict[str, Any]) -> str:
    """The README table: one row per verifier, RAGTruth then HaluEval figures."""
    halu = {r["verifier"]: r for r in report["halueval"]["rows"]}
    lines = [
        "| verifier | RAGTruth AUROC | F1 | precision | recall | bal. acc. | ms / pair | HaluEval AUROC | F1 | ms / pair |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in report["ragtruth"]["rows"]:
        h = halu.get(row["verifier"])
        hv = f"{h['auroc']:.3f} | {h['f1']:.3f} | {h['ms_per_pair']:.2f}" if h else "n/a | n/a | n/a"
        auroc = f"{row['auroc']:.3f}" + (
            f" ({row['auroc_low']:.3f}-{row['auroc_high']:.3f})" if "auroc_low" in row else ""
        )
        lines.append(
            f"| `{row['verifier']}` | {auroc} | {row['f1']:.3f} | {row['precision']:.3f} | {row['recall']:.3f} "
            f"| {row['balanced_accuracy']:.3f} | {row['ms_per_pair']:.2f} | {hv} |"
        )
    rt, hv_ = report["ragtruth"], report["halueval"]
    lines += [
        "",
        f"RAGTruth QA: threshold fitted on {rt['fit']['pairs']} responses ({rt['fit']['unsupported']} unsupported), "
        f"reported on the other {rt['report']['pairs']} ({rt['report']['unsupported']} unsupported), split by source. "
        f"HaluEval QA: fitted on {hv_['fit']['pairs']} answers, reported on {hv_['report']['pairs']} (half unsupported). "
        f"Positive class = unsupported. Measured {report['date']} on {report['machine']}."
        + (
            " RAGTruth AUROC brackets: 95% bootstrap interval, resampling the report half's sources."
            if any("auroc_low" in r for r in rt["rows"])
            else ""
        ),
    ]
    lines += [f"- {n}" for n in dict.fromkeys(report["notes"] + table_notes(report))]
    return "\n".join(lines)


def table_notes(report: dict[str, Any]) -> list[str]:
    """Each dataset's own notes, and each verifier's note. A row shows both datasets' figures,
    and a same-named run can be built differently on each (tfidf-lr is trained on HaluEval's
    train pairs there; the ensembles have other members): such notes name their dataset."""
    labels = {"ragtruth": "RAGTruth", "halueval": "HaluEval"}
    notes = [f"{labels[d]}: {n}" for d in labels for n in report[d].get("notes", [])]
    halu = {r["verifier"]: r.get("note", "") for r in report["halueval"]["rows"]}
    for row in report["ragtruth"]["rows"]:
        name, rt_note, hv_note = row["verifier"], row.get("note", ""), halu.get(row["verifier"], "")
        if rt_note and (rt_note == hv_note or row["verifier"] not in halu):
            notes.append(f"`{name}`: {rt_note}")
        elif rt_note or hv_note:
            both = [f"{labels[d]}: {n}" for d, n in (("ragtruth", rt_note), ("halueval", hv_note)) if n]
            notes.append(f"`{name}`: " + "; ".join(both))
    return notes
