"""Recipe: the three-way NLI model's pairs, from real NLI data (SNLI, MultiNLI, WiCE) and, optionally, SQuAD.

    python -m verityrag.train nli3-data [--squad] [--per-source N]

Sources (under the datasets root, ``VERITYRAG_DATASETS``; licences in its README):

- SNLI dev + test (19,666 pairs, e-SNLI's tokenised copy: the spaces before punctuation are
  removed here): 500 held out for validation, the rest trained on.
- MultiNLI (TaxiNLI's samples: 10,071 pairs, 7,727 of them also listed as the dev-matched
  sample, same pair ids and labels): 1,000 of the dev-matched pairs held out for validation,
  the other 9,071 unique pairs trained on.
- WiCE (claims against the web page they cite): **dev only** is trained on; test (1,070 claims)
  is written apart (``wice_test``) and only ever scored. The evidence is long (often 1,000+
  words): a claim is paired with the window of whole sentences (``--window-words``) that
  shares the most content terms with it, the window the served model's max over windows
  would pick. Labels: supported -> entailment; partially / not supported -> neutral (the page
  does not state the claim; it rarely contradicts it).
- ``--squad``: the binary pairs of ``python -m verityrag.train nli-data`` from SQuAD 2.0 articles
  (train prefix + dev ``split_a``; never an article of the main eval): entailed kinds ->
  entailment, answer swaps -> contradiction, baseless kinds (other paragraph, false premise,
  half-foreign) -> neutral. Off by default: whether they help is measured, not assumed.

Never trained on: RAGTruth and HaluEval (the verifier benchmark's test sets), WiCE test.
Labels: 0 entailment, 1 neutral, 2 contradiction (``LABELS``).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verityrag import datasets
from verityrag.text.analyzer import DEFAULT_ANALYZER
from verityrag.train._common import ROOT, add_seed_and_out, load_squad, read_jsonl_gz, recipe_parser
from verityrag.train.model_build import add_squad_arguments, write_pairs
from verityrag.verify.detectors import sentence_windows

OUT = ROOT / "guard_work" / "nli3" / "data"
LABELS = ("entailment", "neutral", "contradiction")
LABEL_INDEX = {name: i for i, name in enumerate(LABELS)}
WICE_LABELS = {"supported": 0, "partially_supported": 1, "not_supported": 1}
#: SQuAD pair kinds (python -m verityrag.train nli-data) as three-way labels.
SQUAD_KINDS = {
    "sentence_copy": 0,
    "sentence_other": 0,
    "qa_statement": 0,
    "sentence_part": 0,
    "sentence_merged": 0,
    "sentence_swapped": 2,
    "qa_swapped": 2,
    "other_paragraph": 1,
    "false_premise": 1,
    "sentence_mixed": 1,
}
SNLI_VALIDATION = 500
MNLI_VALIDATION = 1000
WINDOW_WORDS = 150

Pair = dict[str, Any]

_DETOKENISE = (
    (re.compile(r" ([.,!?;:%)\]}])"), r"\1"),
    (re.compile(r"([(\[{$]) "), r"\1"),
    (re.compile(r" (n't|'s|'re|'ve|'ll|'d|'m)\b", re.IGNORECASE), r"\1"),
)


def detokenise(text: str) -> str:
    """e-SNLI's tokenised text read as written: ``"packages ."`` -> ``"packages."``."""
    for pattern, replacement in _DETOKENISE:
        text = pattern.sub(replacement, text)
    return text.strip()


def best_window(hypothesis: str, premise: str, max_words: int = WINDOW_WORDS) -> str:
    """The window of ``premise`` sharing the most content terms with ``hypothesis`` (ties: the
    earlier), among the windows of whole sentences of at most ``max_words`` words, one sentence
    of overlap, a longer sentence cut between words, that the served scorer also reads
    (:func:`~verityrag.verify.detectors.sentence_windows`). The premise itself when it fits."""
    windows = sentence_windows(premise.strip(), max_words, _word_counts)
    wanted = set(DEFAULT_ANALYZER.analyze(hypothesis))
    hits = [len(wanted & set(DEFAULT_ANALYZER.analyze(w))) for w in windows]
    return windows[hits.index(max(hits))]


def _word_counts(texts: list[str]) -> list[int]:
    return [len(t.split()) for t in texts]


def _row(premise: str, hypothesis: str, label: int, source: str, kind: str) -> Pair:
    return {"premise": premise, "hypothesis": hypothesis, "label": label, "source": source, "kind": kind}


def _key(row: Pair) -> tuple[str, str]:
    return row["premise"], row["hypothesis"]


def _unique(rows: list[Pair]) -> list[Pair]:
    """The first row of each (premise, hypothesis)."""
    seen: set[tuple[str, str]] = set()
    out = []
    for r in rows:
        if _key(r) not in seen:
            seen.add(_key(r))
            out.append(r)
    return out


def snli_rows(records: Sequence[dict[str, Any]]) -> list[Pair]:
    return [
        _row(
            detokenise(r["premise"]), detokenise(r["hypothesis"]), LABEL_INDEX[r["label"]], "snli", r["split"]
        )
        for r in records
        if r.get("label") in LABEL_INDEX
    ]


def mnli_rows(records: Sequence[dict[str, Any]]) -> list[Pair]:
    return [
        _row(r["premise"], r["hypothesis"], LABEL_INDEX[r["label"]], "mnli", r.get("genre", r["split"]))
        for r in records
        if r.get("label") in LABEL_INDEX and r["premise"].strip() and r["hypothesis"].strip()
    ]


def wice_rows(records: Sequence[dict[str, Any]], window_words: int) -> list[Pair]:
    return [
        _row(
            best_window(r["hypothesis"], r["premise"], window_words),
            r["hypothesis"],
            WICE_LABELS[r["label"]],
            "wice",
            r["label"],
        )
        for r in records
        if r.get("label") in WICE_LABELS
    ]


def wice_test_rows(records: Sequence[dict[str, Any]]) -> list[Pair]:
    """WiCE test with its whole evidence (the served model windows it) and the original label."""
    return [
        _row(r["premise"], r["hypothesis"], WICE_LABELS[r["label"]], "wice", r["label"])
        for r in records
        if r.get("label") in WICE_LABELS
    ]


def squad_rows(args: Any, rng: random.Random) -> list[Pair]:
    from verityrag.train.nli_data import article_pairs

    squad = load_squad(args)
    rows: list[Pair] = []
    for a in squad.train_prefix:
        rows += article_pairs(a, "squad2-train-prefix", rng)
    for t in squad.split_a_train_titles:
        rows += article_pairs(squad.dev[t], "squad2-dev-split_a", rng)
    return [_row(r["premise"], r["hypothesis"], SQUAD_KINDS[r["kind"]], "squad", r["kind"]) for r in rows]


def build(
    snli: Sequence[dict[str, Any]],
    mnli: Sequence[dict[str, Any]],
    wice: Sequence[dict[str, Any]],
    rng: random.Random,
    window_words: int = WINDOW_WORDS,
    per_source: int | None = None,
) -> dict[str, list[Pair]]:
    """train / validation / wice_test rows from the three sources' records (seeded splits)."""
    snli_all = _unique(snli_rows(snli))
    rng.shuffle(snli_all)
    # TaxiNLI's "train" sample holds every pair of its dev-matched sample too (7,727 of its 10,071,
    # same pair ids and labels): the dev-matched pairs are held out from it by text, not by file.
    mnli_all = _unique(mnli_rows(mnli))
    mnli_dev = [r for r in mnli_rows([r for r in mnli if r["split"] != "mnli_train_sample"])]
    rng.shuffle(mnli_dev)
    held_snli = min(SNLI_VALIDATION, len(snli_all) // 5)
    held_mnli = min(MNLI_VALIDATION, len(mnli_dev) // 2)
    validation = snli_all[:held_snli] + mnli_dev[:held_mnli]
    held = {_key(r) for r in validation}
    sources = {
        "snli": snli_all[held_snli:],
        "mnli": [r for r in mnli_all if _key(r) not in held],
        "wice": wice_rows([r for r in wice if r["split"] == "dev"], window_words),
    }
    wice_test = wice_test_rows([r for r in wice if r["split"] == "test"])
    if per_source is not None:  # a small sample of each (tests, quick checks)
        sources = {k: rng.sample(v, min(per_source, len(v))) for k, v in sources.items()}
        validation = rng.sample(validation, min(per_source, len(validation)))
        wice_test = rng.sample(wice_test, min(per_source, len(wice_test)))
    train = [r for rows in sources.values() for r in rows]
    rng.shuffle(train)
    return {"train": train, "validation": validation, "wice_test": wice_test}


def main(argv: Sequence[str] | None = None) -> int:
    p = recipe_parser("nli3-data", __doc__)
    add_squad_arguments(p)
    p.add_argument("--squad", action="store_true", help="add the SQuAD-derived pairs (nli-data's kinds)")
    p.add_argument("--window-words", type=int, default=WINDOW_WORDS, help="WiCE evidence window, in words")
    p.add_argument("--per-source", type=int, default=None, help="keep N pairs of each source and split")
    add_seed_and_out(p, OUT)
    args = p.parse_args(argv)
    if args.window_words < 20:
        p.error("--window-words must be >= 20")
    if args.per_source is not None and args.per_source < 1:
        p.error("--per-source must be >= 1")
    rng = random.Random(args.seed)
    root = datasets.datasets_root()
    splits = build(
        read_jsonl_gz(datasets.dataset_file(datasets.NLI_SNLI, root)),
        read_jsonl_gz(datasets.dataset_file(datasets.NLI_MNLI, root)),
        read_jsonl_gz(datasets.dataset_file(datasets.NLI_WICE, root)),
        rng,
        args.window_words,
        args.per_source,
    )
    if args.squad:
        extra = squad_rows(args, rng)
        if args.per_source is not None:
            extra = rng.sample(extra, min(args.per_source, len(extra)))
        splits["train"] += extra
        rng.shuffle(splits["train"])
    for name, rows in splits.items():
        write_pairs(Path(args.out) / f"{name}.jsonl.gz", rows)
        labels = Counter(LABELS[r["label"]] for r in rows)
        print(
            f"{name}: {len(rows)} pairs {dict(labels)} by source {dict(Counter(r['source'] for r in rows))}"
        )
    return 0
