"""Score each verifier, the guard, the reader check and their stacks on an LLM's recorded answers.

    python scripts/score_llm_answers.py [--answers guard_work/eval/llm_answers_local.jsonl]

Writes scripts/results/llm_checks_local.json (protocol: verityrag/eval/llm_checks.py).
"""

from verityrag.eval.llm_checks_cli import main

if __name__ == "__main__":
    raise SystemExit(main())
