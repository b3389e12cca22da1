"""Fetch the datasets that are missing under the datasets root, from their official sources.

``python -m verityrag.datasets fetch`` (run by ``make data``) looks for every file the bundled
corpus needs (and, with ``--all``, every file the project can fetch) under the root; what is
missing is downloaded from where its publisher keeps it, its sha256 checked before it is put
in place (a mismatch leaves nothing behind), and stored as the readers expect it (gzipped where
the name says so). Files present are never touched, so a root such as ``../shared/data`` that
already holds everything costs one ``stat`` per file.

Files that have no public download (the reconstructed SQuAD v1.0 train copy, the SQuAD 2.0
train prefix, the NLI samples and the RAGTruth subset) are listed with where they come from;
the recipes that need them say so when they are missing.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import tempfile
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from verityrag import datasets
from verityrag.errors import InvalidInputError

# SQuAD 2.0 dev split by article (our own definition): split_a, the 16 articles of the
# Stanford CS224n default-project dev half, trains answerability models; split_b is the rest.
SPLIT_A_TITLES = (
    "Normans", "Computational_complexity_theory", "Huguenot", "Steam_engine", "1973_oil_crisis",
    "European_Union_law", "Packet_switching", "Harvard_University", "Yuan_dynasty", "Immune_system",
    "Scottish_Parliament", "Islamism", "Imperialism", "Warsaw", "French_and_Indian_War", "Force",
)  # fmt: skip
SPLIT_B_TITLES = (
    "Southern_California", "Sky_(United_Kingdom)", "Victoria_(Australia)", "Oxygen", "Amazon_rainforest",
    "Ctenophora", "Fresno,_California", "Black_Death", "Geology", "Pharmacy", "Civil_disobedience",
    "Construction", "Private_school", "Jacksonville,_Florida", "Economic_inequality",
    "University_of_Chicago", "Intergovernmental_Panel_on_Climate_Change", "Prime_number", "Rhine",
)  # fmt: skip


@dataclass(frozen=True)
class Source:
    """Where one dataset file comes from. ``sha256``: of the downloaded content (uncompressed)."""

    url: str | None
    sha256: str | None
    licence: str
    note: str = ""


#: Every file the project reads, by its path under the root.
SOURCES: dict[str, Source] = {
    datasets.SQUAD_V1_DEV: Source(
        "https://rajpurkar.github.io/SQuAD-explorer/dataset/dev-v1.1.json",
        "95aa6a52d5d6a735563366753ca50492a658031da74f301ac5238b03966972c9",
        "CC BY-SA 4.0",
    ),
    datasets.SQUAD_V2_DEV: Source(
        "https://rajpurkar.github.io/SQuAD-explorer/dataset/dev-v2.0.json",
        "80a5225e94905956a6446d296ca1093975c4d3b3260f1d6c8f68bc2ab77182d8",
        "CC BY-SA 4.0",
        "the official dev-v2.0.json, stored under the reconstructed copy's name (same questions, "
        "contexts and answers; the corpus manifest records its own sha256)",
    ),
    datasets.SQUAD_V2_SPLIT: Source(
        None, None, "CC BY-SA 4.0 (derived)", "written from the titles in this module"
    ),
    datasets.HALUEVAL_QA: Source(
        "https://raw.githubusercontent.com/RUCAIBox/HaluEval/b7253db3cdaa0ab2c382f92b26b390109174f77e/data/qa_data.json",
        "89ed139ec5e3a3169a0b30e45569ac1283846f76f27f7bb5e908ee6deed57e88",
        "MIT (content from HotpotQA, CC BY-SA 4.0)",
    ),
    datasets.SQUAD_V1_TRAIN: Source(
        None,
        None,
        "CC BY-SA 4.0",
        "rebuilt from the SQuAD explorer pages (412 of 442 articles); see data/README.md",
    ),
    datasets.SQUAD_V2_TRAIN_PREFIX: Source(
        None,
        None,
        "CC BY-SA 4.0",
        "the first 11 articles of the official train-v2.0.json; see data/README.md",
    ),
    datasets.NLI_SNLI: Source(
        None, None, "CC BY-SA 4.0", "SNLI dev+test as tokenised by e-SNLI; see data/README.md"
    ),
    datasets.NLI_MNLI: Source(None, None, "C-UDA 1.0", "TaxiNLI's MultiNLI samples; see data/README.md"),
    datasets.NLI_WICE: Source(None, None, "ODC-BY", "WiCE claim-level oracle chunks; see data/README.md"),
    datasets.RAGTRUTH_QA: Source(
        None, None, "MIT", "the QC-NLI copy of RAGTruth's QA test split; see data/README.md"
    ),
}

#: What ``make data`` needs: the sources of the bundled corpus and question sets.
CORPUS_FILES = (datasets.SQUAD_V1_DEV, datasets.SQUAD_V2_DEV, datasets.SQUAD_V2_SPLIT)

Opener = Callable[[str], object]


def split_definition() -> bytes:
    """The answerability split file, as JSON."""
    body = {
        "description": "Article-disjoint split of SQuAD v2.0 dev: split_a = the 16 articles of the Stanford "
        "CS224n default-project dev half; split_b = the remaining 19 official dev articles.",
        "split_a_titles": list(SPLIT_A_TITLES),
        "split_b_titles": list(SPLIT_B_TITLES),
    }
    return (json.dumps(body, indent=1) + "\n").encode("utf-8")


def download(url: str, expected_sha256: str, target: Path, timeout: float = 60.0) -> Path:
    """Download ``url`` to ``target`` (gzipped when its name ends .gz) if its sha256 is the expected one.

    The bytes go to a temporary file beside ``target`` first; a checksum mismatch or a failed
    download leaves nothing behind and raises.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}.", delete=False) as tmp:
        partial = Path(tmp.name)
    try:
        opener = gzip.open if target.suffix == ".gz" else open
        with urllib.request.urlopen(url, timeout=timeout) as response, opener(partial, "wb") as out:
            for block in iter(lambda: response.read(1 << 20), b""):
                digest.update(block)
                out.write(block)
        if digest.hexdigest() != expected_sha256:
            raise InvalidInputError(
                "download", f"{url}: sha256 {digest.hexdigest()} is not the published {expected_sha256}"
            )
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def fetch(
    files: Sequence[str],
    root: Path | None = None,
    sources: Mapping[str, Source] | None = None,
    say: Callable[[str], None] = print,
) -> list[str]:
    """Put every one of ``files`` under ``root``, fetching the missing ones; returns those fetched.

    A missing file without a download raises :class:`~verityrag.errors.DatasetMissingError`.
    """
    base = datasets.datasets_root() if root is None else root
    table = SOURCES if sources is None else sources
    fetched = []
    for name in files:
        target = base / name
        if target.is_file():
            continue
        source = table[name]
        if name == datasets.SQUAD_V2_SPLIT:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(split_definition())
        elif source.url is None or source.sha256 is None:
            datasets.dataset_file(name, base)  # raises, naming the file and the variable
        else:
            say(f"fetching {name} from {source.url}")
            download(source.url, source.sha256, target)
        fetched.append(name)
    return fetched


def describe() -> str:
    """A table of every dataset file: where it comes from and its licence."""
    lines = []
    for name, s in SOURCES.items():
        where = s.url or s.note
        lines.append(f"{name}\n    {where}\n    licence: {s.licence}")
    return "\n".join(lines)
