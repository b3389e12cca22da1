"""The multi-hop benchmark's data: HaluEval's run-together paragraphs apart, titled, by kind."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from verityrag.eval.multihop import (
    HopOutcome,
    HopQuestion,
    corpus_of,
    document_of,
    load_questions,
    multihop_table,
    split_paragraphs,
    summarise,
    title_of,
)

pytestmark = pytest.mark.unit

MAGAZINES = (
    "Arthur's Magazine (1844–1846) was an American literary periodical published in Philadelphia in the "
    "19th century.First for Women is a woman's magazine published by Bauer Media Group in the USA."
)
OBEROI = (
    "The Oberoi family is an Indian family that is famous for its involvement in hotels, namely through "
    "The Oberoi Group.The Oberoi Group is a hotel company with its head office in Delhi."
)


def test_the_two_paragraphs_come_apart_where_they_were_run_together() -> None:
    assert split_paragraphs(OBEROI) == (
        "The Oberoi family is an Indian family that is famous for its involvement in hotels, namely "
        "through The Oberoi Group.",
        "The Oberoi Group is a hotel company with its head office in Delhi.",
    )
    assert split_paragraphs("One paragraph. Its second sentence.") is None  # no join: not two
    assert split_paragraphs("It ends.Then one.More") is None  # two joins: not one clear place


def test_a_paragraph_is_titled_by_what_its_first_sentence_is_about() -> None:
    first, second = split_paragraphs(MAGAZINES) or ("", "")
    assert title_of(first) == "Arthur's Magazine"
    assert title_of(second) == "First for Women"
    assert document_of(first) == document_of(first)  # one id per text: shared paragraphs are one document


def test_kinds_and_the_paragraph_a_missing_hop_removes() -> None:
    magazines = HopQuestion(
        0,
        "Which magazine was started first Arthur's Magazine or First for Women?",
        "Arthur's Magazine",
        split_paragraphs(MAGAZINES) or ("", ""),
    )
    oberoi = HopQuestion(
        1,
        "The Oberoi family is part of a hotel company that has a head office in what city?",
        "Delhi",
        split_paragraphs(OBEROI) or ("", ""),
    )
    same = HopQuestion(2, "Were both magazines American?", "yes", magazines.paragraphs)
    assert (magazines.kind, oberoi.kind, same.kind) == ("comparison", "bridge", "yes_no")
    assert oberoi.answer_paragraph == 1  # the one that says Delhi
    assert magazines.answer_paragraph == 0


def test_a_slice_reads_its_items_only(tmp_path: Path) -> None:
    path = tmp_path / "qa.json.gz"
    items = [{"knowledge": OBEROI, "question": f"q{i}", "right_answer": "Delhi"} for i in range(7502)]
    items[7500]["knowledge"] = "no join here."
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(item) + "\n" for item in items)
    dev = load_questions(path, "dev")
    assert [q.index for q in dev] == [7501]  # 7500's paragraphs did not split
    assert len(corpus_of(dev + dev)) == 2


def test_the_summary_counts_right_wrong_and_refused_and_the_missing_hops_refused() -> None:
    rows = [
        HopOutcome(0, "bridge", False, True, True, True, None, 10.0),
        HopOutcome(0, "bridge", True, False, True, False, "missing_hop", 12.0),
        HopOutcome(1, "bridge", False, True, False, True, None, 20.0),
        HopOutcome(1, "bridge", True, True, False, False, None, 22.0),
        HopOutcome(2, "yes_no", False, False, False, False, "answerability", 30.0),
        HopOutcome(2, "yes_no", True, False, True, False, "answerability", 31.0),
    ]
    summary = summarise(rows)
    assert (summary["questions"], summary["right"], summary["wrong"], summary["refused"]) == (3, 1, 1, 1)
    assert summary["missing_hop_refused"] == 2
    assert summary["kinds"]["yes_no"]["refused"] == 1
    assert summary["latency_ms"]["p50"] == 20.0  # of the questions asked with every document


def test_the_readme_table_has_a_column_per_setting_and_a_row_per_kind() -> None:
    rows = [
        HopOutcome(0, "bridge", False, True, True, True, None, 10.0),
        HopOutcome(0, "bridge", True, False, True, False, "missing_hop", 12.0),
        HopOutcome(2, "yes_no", False, False, False, False, "answerability", 30.0),
        HopOutcome(2, "yes_no", True, True, False, False, None, 31.0),
    ]
    report = {"data": "2 questions", **summarise(rows)}
    table = multihop_table({"defaults": report, "hops": report}).splitlines()
    assert table[2] == "| questions | defaults | hops |"
    assert table[4] == "| all (2): right / wrong / refused | 50.0% / 0.0% / 50.0% | 50.0% / 0.0% / 50.0% |"
    assert table[7].startswith("| yes/no (1): right / wrong / refused | 0.0% / 0.0% / 100.0%")
    assert table[8] == "| refused with the answer's paragraph removed | 50.0% | 50.0% |"
