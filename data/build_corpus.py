"""Build the VerityRAG evaluation corpus and question sets from real SQuAD dev data.

The standard library and ``verityrag.datasets`` (where the datasets root is) only. Run from anywhere::

    python data/build_corpus.py              # read the datasets root, write data/built/
    python data/build_corpus.py --if-stale   # the same, skipped when data/built/ is up to date (make data)

Outputs (default ``data/``): ``corpus.jsonl``, ``questions/calibration.jsonl``,
``questions/test.jsonl`` and ``corpus_manifest.json``. The outputs depend only on
the source files and ``--seed``: running it twice gives byte-identical files.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import random
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))  # run as a file: the package beside it, installed or not

from verityrag import datasets  # noqa: E402
from verityrag.errors import DatasetMissingError  # noqa: E402

# The sources, under the datasets root (VERITYRAG_DATASETS, default ../shared/data); gzipped
# or plain files give the same outputs.
DEFAULT_SQUAD_V1 = datasets.SQUAD_V1_DEV
DEFAULT_SQUAD_V2 = datasets.SQUAD_V2_DEV
DEFAULT_SPLIT = datasets.SQUAD_V2_SPLIT
DEFAULT_SEED = 13
# Built files are git-ignored: the repository holds no copy of a dataset nor files derived from one.
DEFAULT_OUT_DIR = "data/built"
# Written last, beside the outputs: what they were built from (``--if-stale`` compares it).
STAMP_FILE = ".build-stamp.json"
OUTPUT_FILES = ("corpus.jsonl", "questions/calibration.jsonl", "questions/test.jsonl", "corpus_manifest.json")

# Official sha256 of SQuAD 1.1 dev; a mismatch is reported, not fatal.
SQUAD_V1_DEV_SHA256 = "95aa6a52d5d6a735563366753ca50492a658031da74f301ac5238b03966972c9"

KIND_ANSWERABLE = "answerable"
KIND_HELD_OUT = "held_out"
KIND_UNANSWERABLE = "unanswerable_in_domain"
KINDS = (KIND_ANSWERABLE, KIND_HELD_OUT, KIND_UNANSWERABLE)

N_ANSWERABLE = 400
N_HELD_OUT = 400
MAX_UNANSWERABLE = 300
MAX_PER_PARAGRAPH = 2

# The 12 ingested articles (SQuAD titles), in SQuAD 1.1 dev file order.
# Six are absent from SQuAD 2.0 dev; six are SQuAD 2.0 dev articles of split_b
# (never split_a, which is reserved for training an answerability classifier).
INGESTED_TITLES: tuple[str, ...] = (
    "Super_Bowl_50",
    "Nikola_Tesla",
    "Oxygen",
    "Apollo_program",
    "Ctenophora",
    "Black_Death",
    "Victoria_and_Albert_Museum",
    "Economic_inequality",
    "Doctor_Who",
    "Chloroplast",
    "Prime_number",
    "Rhine",
)

SELECTION_RULE = (
    "Fixed, listed choice of 12 SQuAD 1.1 dev articles (INGESTED_TITLES in "
    "data/build_corpus.py), made by inspecting the data: (a) none is in split_a of "
    "answerability_split.json (reserved for training an answerability classifier); "
    "(b) six are SQuAD 2.0 dev articles of split_b, which supply the in-domain "
    "unanswerable questions, and six are not in SQuAD 2.0 dev at all; (c) together "
    "they hold 605 paragraphs (target ~620, allowed 600-640); (d) they cover distinct "
    "domains (sport, engineering biography, spaceflight, museum, television, cell "
    "biology, chemistry, zoology, medieval history, economics, mathematics, "
    "geography) and avoid pairs that overlap strongly with a held-out article "
    "(e.g. Southern_California vs Fresno,_California; Genghis_Khan vs Yuan_dynasty; "
    "Martin_Luther vs Huguenot). The other 36 articles are held out. Questions are "
    "sampled with one random.Random(seed) in a fixed order: answerable, held_out, "
    "unanswerable_in_domain, then the 50/50 calibration/test split of each kind in "
    "that order. At most 2 questions per paragraph for every kind. held_out "
    "questions are drawn only from held-out articles outside split_a, and a "
    "held_out question whose normalised text equals a question of an ingested "
    "article is skipped."
)

RESERVED_NOTE = (
    "reserved_articles are ingested articles that also occur in SQuAD 2.0 dev and "
    "supply the in-domain unanswerable test questions. No SQuAD 2.0 data of these "
    "articles may train a learned model (answerability gate, guard, NLI verifier): "
    "train those on split_a_titles of answerability_split.json (disjoint from every "
    "ingested article) and/or the SQuAD 2.0 train prefix. The corpus-level models "
    "(the sufficiency gate and thresholds) are fitted on this corpus's calibration "
    "split only, which is question-disjoint from the test split; they do not use the "
    "unanswerable_in_domain calibration questions. split_a articles supply no "
    "question of this evaluation, because SQuAD 2.0 dev contains their SQuAD 1.1 "
    "questions verbatim (same ids)."
)

Json = dict[str, Any]


def repo_path(path: str) -> Path:
    """Resolve ``path`` against the repository root unless it is absolute."""
    p = Path(path)
    return p if p.is_absolute() else REPO_ROOT / p


def open_source(path: Path) -> io.BufferedIOBase:
    """Open a source file for reading bytes, decompressing a ``.gz`` file."""
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    return path.open("rb")


def source_name(path: Path) -> str:
    """The source's name as the manifest records it: without a ``.gz`` suffix."""
    return path.name.removesuffix(".gz")


def content_digest(path: Path) -> tuple[int, str]:
    """Byte count and hex sha256 of a source file's (uncompressed) content, in one read.

    Hashing the content rather than the gzip stream keeps the official sha256 of SQuAD 1.1
    dev checkable on the bundled copy, and the manifest the same whichever copy was read.
    """
    digest, size = hashlib.sha256(), 0
    with open_source(path) as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
            size += len(block)
    return size, digest.hexdigest()


def load_json(path: Path) -> Any:
    """Load a UTF-8 JSON file, gzipped or plain."""
    with open_source(path) as fh:
        return json.loads(fh.read().decode("utf-8"))


def slugify(title: str) -> str:
    """Lowercase slug of an article title: runs of non-alphanumerics become '-'."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def display_title(title: str) -> str:
    """SQuAD title with underscores replaced by spaces."""
    return title.replace("_", " ")


def doc_id_for(title: str, paragraph_index: int) -> str:
    """Document id of paragraph ``paragraph_index`` (0-based) of an article."""
    return f"squad-{slugify(title)}-{paragraph_index:03d}"


def dedupe(texts: Iterable[str]) -> list[str]:
    """Drop repeated strings, keeping first-occurrence order."""
    seen: set[str] = set()
    out: list[str] = []
    for text in texts:
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def normalise_question(text: str) -> str:
    """Lowercased, whitespace-collapsed question text used to detect duplicates."""
    return " ".join(text.lower().split())


def cap_per_paragraph(
    groups: Sequence[Sequence[Json]], rng: random.Random, cap: int = MAX_PER_PARAGRAPH
) -> list[Json]:
    """Take at most ``cap`` random items from each group (groups in a fixed order)."""
    pool: list[Json] = []
    for group in groups:
        items = list(group)
        if len(items) > cap:
            items = rng.sample(items, cap)
        pool.extend(items)
    return pool


def take(pool: list[Json], n: int, rng: random.Random) -> list[Json]:
    """Random sample of ``min(n, len(pool))`` items."""
    return rng.sample(pool, min(n, len(pool)))


def split_half(items: list[Json], rng: random.Random) -> tuple[list[Json], list[Json]]:
    """Shuffle a copy of ``items`` and cut it into (calibration, test) halves."""
    shuffled = sorted(items, key=lambda q: str(q["id"]))
    rng.shuffle(shuffled)
    half = (len(shuffled) + 1) // 2
    return shuffled[:half], shuffled[half:]


def dumps_line(obj: Json) -> str:
    """Canonical one-line JSON."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def write_jsonl(path: Path, rows: Iterable[Json]) -> None:
    """Write rows as JSON Lines, LF line endings, trailing newline."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(dumps_line(row) + "\n")


def write_json(path: Path, obj: Json) -> None:
    """Write indented, key-sorted JSON with a trailing newline."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, indent=2)
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        fh.write(text + "\n")


def source_entry(path: Path) -> Json:
    """Manifest entry for one source file (name relative to the data folder)."""
    size, sha256 = content_digest(path)
    return {"file": f"{path.parent.name}/{source_name(path)}", "bytes": size, "sha256": sha256}


def question_row(qa: Json, kind: str, title: str, answers: list[str], source_doc_id: str | None) -> Json:
    """Question object shared by every kind (``split`` is filled in later)."""
    return {
        "id": qa["id"],
        "question": str(qa["question"]).strip(),
        "answers": answers,
        "kind": kind,
        "title": display_title(title),
        "source_doc_id": source_doc_id,
    }


def build(squad_v1: Path, squad_v2: Path, split_file: Path, seed: int, out_dir: Path) -> Json:
    """Build every output file and return the manifest."""
    v1_articles: list[Json] = load_json(squad_v1)["data"]
    v2_articles: list[Json] = load_json(squad_v2)["data"]
    split: Json = load_json(split_file)
    split_a = set(split["split_a_titles"])
    split_b = set(split["split_b_titles"])

    v1_titles = [str(a["title"]) for a in v1_articles]
    v2_titles = {str(a["title"]) for a in v2_articles}
    missing = [t for t in INGESTED_TITLES if t not in v1_titles]
    if missing:
        raise SystemExit(f"ingested titles not in SQuAD 1.1 dev: {missing}")
    clash = sorted(set(INGESTED_TITLES) & split_a)
    if clash:
        raise SystemExit(f"ingested titles must not be in split_a: {clash}")
    ingested = [t for t in v1_titles if t in INGESTED_TITLES]
    held_out = [t for t in v1_titles if t not in INGESTED_TITLES]
    reserved = [t for t in ingested if t in v2_titles]
    in_split_b = [t for t in ingested if t in split_b]
    if len(in_split_b) < 4:
        raise SystemExit(f"need >= 4 ingested split_b articles, got {in_split_b}")

    # Corpus: one document per paragraph of an ingested article.
    corpus: list[Json] = []
    context_to_doc: dict[tuple[str, str], str] = {}
    answerable_groups: list[list[Json]] = []
    ingested_questions: set[str] = set()
    for article in v1_articles:
        title = str(article["title"])
        if title not in INGESTED_TITLES:
            continue
        for index, paragraph in enumerate(article["paragraphs"]):
            doc_id = doc_id_for(title, index)
            context = str(paragraph["context"])
            corpus.append({"doc_id": doc_id, "title": display_title(title), "text": context})
            context_to_doc[(title, context.strip())] = doc_id
            group = []
            for qa in paragraph["qas"]:
                ingested_questions.add(normalise_question(qa["question"]))
                answers = dedupe(str(a["text"]) for a in qa["answers"])
                group.append(question_row(qa, KIND_ANSWERABLE, title, answers, doc_id))
            answerable_groups.append(group)

    rng = random.Random(seed)

    answerable_pool = cap_per_paragraph(answerable_groups, rng)
    answerable = take(answerable_pool, N_ANSWERABLE, rng)

    # Held out: questions the corpus cannot answer, from articles outside split_a.
    held_out_sources = [t for t in held_out if t not in split_a]
    held_out_groups: list[list[Json]] = []
    skipped_duplicates = 0
    for article in v1_articles:
        title = str(article["title"])
        if title not in held_out_sources:
            continue
        for paragraph in article["paragraphs"]:
            group = []
            for qa in paragraph["qas"]:
                if normalise_question(qa["question"]) in ingested_questions:
                    skipped_duplicates += 1
                    continue
                row = question_row(qa, KIND_HELD_OUT, title, [], None)
                row["gold_if_known"] = dedupe(str(a["text"]) for a in qa["answers"])
                group.append(row)
            held_out_groups.append(group)
    held_out_pool = cap_per_paragraph(held_out_groups, rng)
    held_out_qs = take(held_out_pool, N_HELD_OUT, rng)

    # Unanswerable in domain: SQuAD 2.0 impossible questions on an ingested paragraph.
    unanswerable_groups: list[list[Json]] = []
    unanswerable_total = 0
    unanswerable_unmatched = 0
    for article in v2_articles:
        title = str(article["title"])
        if title not in INGESTED_TITLES:
            continue
        for paragraph in article["paragraphs"]:
            impossible = [qa for qa in paragraph["qas"] if qa.get("is_impossible")]
            doc = context_to_doc.get((title, str(paragraph["context"]).strip()))
            if doc is None:
                unanswerable_unmatched += len(impossible)
                continue
            unanswerable_total += len(impossible)
            unanswerable_groups.append(
                [question_row(qa, KIND_UNANSWERABLE, title, [], doc) for qa in impossible]
            )
    unanswerable_pool = cap_per_paragraph(unanswerable_groups, rng)
    unanswerable = take(unanswerable_pool, MAX_UNANSWERABLE, rng)

    calibration: list[Json] = []
    test: list[Json] = []
    counts: Json = {}
    for kind, rows in (
        (KIND_ANSWERABLE, answerable),
        (KIND_HELD_OUT, held_out_qs),
        (KIND_UNANSWERABLE, unanswerable),
    ):
        cal, tst = split_half(rows, rng)
        for row in cal:
            row["split"] = "calibration"
        for row in tst:
            row["split"] = "test"
        calibration.extend(cal)
        test.extend(tst)
        counts[kind] = {"calibration": len(cal), "test": len(tst), "total": len(rows)}

    ids = [q["id"] for q in calibration + test]
    if len(ids) != len(set(ids)):
        raise SystemExit("duplicate question id across kinds or splits")

    def order(q: Json) -> tuple[int, str]:
        return KINDS.index(str(q["kind"])), str(q["id"])

    calibration.sort(key=order)
    test.sort(key=order)

    write_jsonl(out_dir / "corpus.jsonl", corpus)
    write_jsonl(out_dir / "questions" / "calibration.jsonl", calibration)
    write_jsonl(out_dir / "questions" / "test.jsonl", test)

    docs_per_article = {t: sum(1 for d in corpus if d["title"] == display_title(t)) for t in ingested}
    manifest: Json = {
        "description": (
            "VerityRAG evaluation corpus: 12 SQuAD 1.1 dev articles ingested (one "
            "document per paragraph), 36 held out; question sets for calibration and "
            "test. Built by data/build_corpus.py."
        ),
        "licence": "CC BY-SA 4.0 (derived from SQuAD 1.1 and SQuAD 2.0)",
        "sources": {
            "squad_v1.1_dev": source_entry(squad_v1),
            "squad_v2.0_dev": source_entry(squad_v2),
            "answerability_split": source_entry(split_file),
        },
        "seed": seed,
        "selection_rule": SELECTION_RULE,
        "ingested_titles": ingested,
        "ingested_documents_per_title": docs_per_article,
        "held_out_titles": held_out,
        "held_out_question_source_titles": held_out_sources,
        "reserved_articles": reserved,
        "note": RESERVED_NOTE,
        "num_documents": len(corpus),
        "total_words": sum(len(str(d["text"]).split()) for d in corpus),
        "question_counts": counts,
        "question_counts_by_split": {
            "calibration": len(calibration),
            "test": len(test),
        },
        "available": {
            "answerable_after_per_paragraph_cap": len(answerable_pool),
            "held_out_after_per_paragraph_cap": len(held_out_pool),
            "held_out_skipped_duplicate_of_ingested_question": skipped_duplicates,
            "unanswerable_in_domain_total": unanswerable_total,
            "unanswerable_in_domain_after_per_paragraph_cap": len(unanswerable_pool),
            "unanswerable_in_domain_context_not_matched": unanswerable_unmatched,
        },
        "max_questions_per_paragraph": MAX_PER_PARAGRAPH,
        "files": {
            "corpus": "corpus.jsonl",
            "calibration": "questions/calibration.jsonl",
            "test": "questions/test.jsonl",
        },
        "schema": {
            "corpus": ["doc_id", "title", "text"],
            "question": [
                "id",
                "question",
                "answers",
                "kind",
                "title",
                "split",
                "source_doc_id",
                "gold_if_known (held_out only)",
            ],
        },
    }
    write_json(out_dir / "corpus_manifest.json", manifest)
    return manifest


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse command-line flags."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--datasets",
        type=Path,
        default=None,
        help=f"datasets root (default: ${datasets.ENV_VAR} or ../shared/data)",
    )
    parser.add_argument(
        "--squad-v1", default=None, help=f"SQuAD 1.1 dev JSON (default: <root>/{DEFAULT_SQUAD_V1})"
    )
    parser.add_argument(
        "--squad-v2", default=None, help=f"SQuAD 2.0 dev JSON (default: <root>/{DEFAULT_SQUAD_V2})"
    )
    parser.add_argument(
        "--split", default=None, help=f"answerability_split.json (default: <root>/{DEFAULT_SPLIT})"
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="sampling seed")
    parser.add_argument("--out-dir", default=DEFAULT_OUT_DIR, help="output folder (default: data/built)")
    parser.add_argument("--if-stale", action="store_true", help="do nothing when the outputs are up to date")
    return parser.parse_args(argv)


def source_paths(args: argparse.Namespace) -> list[Path]:
    """The three source files: the flags' paths, else under the datasets root (missing: an error naming it)."""
    root = args.datasets if args.datasets is not None else datasets.datasets_root()
    out = []
    for flag, default in (
        (args.squad_v1, DEFAULT_SQUAD_V1),
        (args.squad_v2, DEFAULT_SQUAD_V2),
        (args.split, DEFAULT_SPLIT),
    ):
        if flag is not None:
            path = repo_path(flag)
            if not path.is_file():
                raise DatasetMissingError(
                    str(path), str(path.parent), "check the path given on the command line"
                )
            out.append(path)
        else:
            out.append(datasets.dataset_file(default, root))
    return out


def build_stamp(sources: Sequence[Path], seed: int) -> Json:
    """What the outputs depend on: each source's content digest, the seed and this script's digest."""
    script = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    return {"sources": [source_entry(p) for p in sources], "seed": seed, "builder_sha256": script}


def up_to_date(out_dir: Path, stamp: Json) -> bool:
    """Every output is there and was built from the same sources, seed and script."""
    stamp_path = out_dir / STAMP_FILE
    if not stamp_path.is_file() or not all((out_dir / name).is_file() for name in OUTPUT_FILES):
        return False
    try:
        return bool(json.loads(stamp_path.read_text(encoding="utf-8")) == stamp)
    except ValueError:
        return False


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: build the corpus and print a one-line summary per output."""
    args = parse_args(argv)
    try:
        squad_v1, squad_v2, split_file = source_paths(args)
    except DatasetMissingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out_dir = repo_path(args.out_dir)
    stamp = build_stamp((squad_v1, squad_v2, split_file), args.seed)
    if args.if_stale and up_to_date(out_dir, stamp):
        print(f"{out_dir} is up to date")
        return 0
    (out_dir / STAMP_FILE).unlink(missing_ok=True)  # an interrupted build is never taken as done
    manifest = build(squad_v1, squad_v2, split_file, args.seed, out_dir)
    # The manifest already holds the content digest: checking it there reads the file once.
    if manifest["sources"]["squad_v1.1_dev"]["sha256"] != SQUAD_V1_DEV_SHA256:
        print("warning: SQuAD 1.1 dev sha256 differs from the official file", file=sys.stderr)
    write_json(out_dir / STAMP_FILE, stamp)
    print(
        f"{manifest['num_documents']} documents, {manifest['total_words']} words; "
        f"questions: {json.dumps(manifest['question_counts'], sort_keys=True)}"
    )
    print(f"wrote {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
