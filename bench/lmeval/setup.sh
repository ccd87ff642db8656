#!/usr/bin/env bash
# Installs EleutherAI lm-evaluation-harness 0.4.13 into a virtual environment for `npm run bench:loglik` (issue #47),
# from the local package index only: its wheel without its dependencies, then the few packages it imports for an
# API model's log-likelihood run. pytablewriter is missing from the index: bench/lmeval/pytablewriter.py stands in.
# Usage: bash bench/lmeval/setup.sh [VENV]   (default: /tmp/lmeval-venv; the bench reads LMEVAL_PYTHON)
set -euo pipefail
venv="${1:-/tmp/lmeval-venv}"
index=(--index-url file:///opt/pypi/simple --extra-index-url file:///opt/pypi-more/simple)
python3 -m venv "$venv"
"$venv/bin/pip" install "${index[@]}" --no-deps lm_eval==0.4.13
"$venv/bin/pip" install "${index[@]}" requests aiohttp tenacity tqdm datasets transformers dill more_itertools \
  numexpr scikit-learn sacrebleu jinja2 zstandard
echo "LMEVAL_PYTHON=$venv/bin/python"
