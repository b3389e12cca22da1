"""Shared by the cross-encoder tests: a tiny random BERT config and its model folder metadata.

The tiny model (2 layers, hidden 32) uses the real all-MiniLM-L6-v2 WordPiece tokenizer,
so encoding is the production one; training it takes seconds and downloads nothing.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from verityrag.models import ModelMetadata

TINY_BERT = {
    "vocab_size": 30522,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "max_position_embeddings": 128,
}

#: Trainer options that teach the tiny model a one-word task in a few seconds.
TINY_TRAINING: dict[str, Any] = {
    "max_length": 64,
    "epochs": 4,
    "batch_size": 16,
    "learning_rate": 3e-3,
    "random_init_config": TINY_BERT,
    "freeze_word_embeddings": False,
    "progress": False,
}


def write_tiny_metadata(folder: Path, name: str, pairs: int) -> None:
    """The metadata.json a tiny (question, evidence) model folder is served with (window 64)."""
    ModelMetadata(
        name=name,
        base_model="random tiny BERT",
        data={"synthetic": pairs},
        created="test",
        max_length=64,
        long_side="second",
        threshold=0.5,
        stride=16,
    ).write(folder)


COLOURS = ["red", "blue", "green", "yellow", "purple", "orange"]
FILLER = "the river flows past the old mill and the town square near the bridge".split()


def colour_pairs(n: int, seed: int) -> tuple[list[tuple[str, str]], list[float], list[list[str]]]:
    """(question, evidence): answerable when the car's colour is given; the answer is that colour."""
    rng = random.Random(seed)
    pairs, labels, answers = [], [], []
    for _ in range(n):
        present = rng.random() < 0.5
        colour = rng.choice(COLOURS)
        words = rng.sample(FILLER, 6)
        words.insert(rng.randrange(len(words) + 1), f"{colour} car" if present else "car")
        pairs.append(("what colour is the car", " ".join(words)))
        labels.append(float(present))
        answers.append([colour] if present else [])
    return pairs, labels, answers
