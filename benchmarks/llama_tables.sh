#!/usr/bin/env bash
# The llama.cpp tables of issue 20, one run each on a quiet machine: for each GGUF model, grammar
# paragraphs, grammar sentences and RAG through `specdraft bench --backend llama-cpp` (plain
# llama.cpp through specdraft's engine, specdraft's drafters, llama-cpp-python's own plain generation
# and prompt lookup, all in one run with identical-output checks), plus the batch-invariance and
# pass-cost measurement, and `specdraft correct` run once per paragraph in fresh processes (oneshot_correct.py). Results go to docs/bench/llama-<set>-<model>/.
#   bash benchmarks/llama_tables.sh [MODEL ...]     (default: qwen2.5-coder-0.5b smollm2-135m qwen2.5-coder-1.5b)
set -euo pipefail
cd "$(dirname "$0")/.."
SPECDRAFT=.venv/bin/specdraft
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(qwen2.5-coder-0.5b smollm2-135m qwen2.5-coder-1.5b)
short() { case "$1" in qwen2.5-coder-0.5b) echo 0.5b;; qwen2.5-coder-1.5b) echo 1.5b;; smollm2-135m) echo 135m;; *) echo "$1";; esac; }
for model in "${models[@]}"; do
    s=$(short "$model")
    $SPECDRAFT bench grammar-paragraphs --backend llama-cpp --model "$model" --limit 5 --out "docs/bench/llama-gp-$s"
    $SPECDRAFT bench grammar-sentences --backend llama-cpp --model "$model" --limit 12 --out "docs/bench/llama-gs-$s"
    $SPECDRAFT bench rag --backend llama-cpp --model "$model" --limit 6 --max-new-tokens 64 --out "docs/bench/llama-rag-$s"
    .venv/bin/python benchmarks/oneshot_correct.py --model "$model" --out "docs/bench/llama-correct-oneshot-$s"
done
.venv/bin/python benchmarks/llama_batch_invariance.py --models "${INVARIANCE_MODELS:-smollm2-135m,qwen2.5-coder-0.5b,gemma-3-270m,qwen2.5-coder-1.5b}" --out docs/bench/llama-batch-invariant
