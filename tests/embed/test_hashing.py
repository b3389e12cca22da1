"""HashingEmbedder: the stateless default embedder."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from verityrag.embed.embedder import Embedder
from verityrag.embed.hashing import HashingEmbedder
from verityrag.errors import InvalidInputError

TEXTS = [
    "The steam engine converts heat into mechanical work.",
    "Nikola Tesla worked on alternating current.",
    "Oxygen is a chemical element with symbol O.",
]


@pytest.mark.unit
def test_encode_texts_rows_have_unit_norm_float32() -> None:
    vectors = HashingEmbedder().encode(TEXTS)
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


@pytest.mark.unit
def test_encode_same_text_twice_gives_identical_vectors() -> None:
    embedder = HashingEmbedder(dim=64)
    assert np.array_equal(embedder.encode(TEXTS), embedder.encode(TEXTS))
    assert np.array_equal(embedder.encode(TEXTS[:1])[0], embedder.encode(TEXTS)[0])


@pytest.mark.integration
def test_encode_in_another_process_with_other_hash_seed_gives_identical_vectors(
    child_env: dict[str, str], python_exe: str
) -> None:
    code = (
        "import json, sys; from verityrag.embed.hashing import HashingEmbedder; "
        "texts = json.loads(sys.stdin.read()); "
        "print(json.dumps(HashingEmbedder().encode(texts).tolist()))"
    )
    env = dict(child_env, PYTHONHASHSEED="12345")
    out = subprocess.run(
        [python_exe, "-c", code], input=json.dumps(TEXTS), env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    theirs = np.asarray(json.loads(out.stdout), dtype=np.float32)
    assert np.array_equal(theirs, HashingEmbedder().encode(TEXTS))


@pytest.mark.unit
@pytest.mark.parametrize("text", ["the of and it was", "", "!!! ... ???"])
def test_encode_text_without_terms_gives_zero_vector(text: str) -> None:
    vectors = HashingEmbedder().encode([text, TEXTS[0]])
    assert not vectors[0].any()
    assert np.isclose(np.linalg.norm(vectors[1]), 1.0)


@pytest.mark.unit
def test_encode_similar_texts_closer_than_unrelated() -> None:
    anchor, similar, unrelated = HashingEmbedder().encode(
        [
            "The steam engine converts heat into mechanical work.",
            "A steam engine turns heat into work.",
            "Ctenophores are marine invertebrates with comb rows.",
        ]
    )
    assert float(anchor @ similar) > 0.4
    assert float(anchor @ similar) > float(anchor @ unrelated) + 0.3


@pytest.mark.unit
def test_encode_empty_batch_gives_empty_matrix() -> None:
    assert HashingEmbedder(dim=16).encode([]).shape == (0, 16)


@pytest.mark.unit
def test_hashing_embedder_satisfies_embedder_protocol() -> None:
    assert isinstance(HashingEmbedder(), Embedder)


@pytest.mark.unit
def test_fingerprint_other_dim_or_ngrams_changes_fingerprint() -> None:
    base = HashingEmbedder().fingerprint()
    assert HashingEmbedder(dim=128).fingerprint() != base
    assert HashingEmbedder(ngram_range=(1, 1)).fingerprint() != base
    assert HashingEmbedder().fingerprint() == base


@pytest.mark.unit
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dim": 4}, "dim must be >= 8"),
        ({"ngram_range": (2, 1)}, "ngram_range"),
        ({"ngram_range": (0, 1)}, "ngram_range"),
    ],
)
def test_hashing_embedder_bad_parameters_raise(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        HashingEmbedder(**kwargs)  # type: ignore[arg-type]


@pytest.mark.unit
def test_encode_single_string_raises_naming_texts() -> None:
    # A str is a Sequence[str]: it was encoded as one row per character.
    with pytest.raises(InvalidInputError, match="texts: expected a sequence of strings, got one str"):
        HashingEmbedder().encode("steam engine")
