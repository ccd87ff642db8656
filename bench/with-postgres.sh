#!/usr/bin/env bash
# Runs a benchmark that needs PostgreSQL: the server named by RUMEDBENCH_TEST_PG_URL, else a throwaway one started
# (and stopped) by .ci/postgres.sh, as the tests' is.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${RUMEDBENCH_TEST_PG_URL:-}" ]; then source .ci/postgres.sh; fi
"$@"
