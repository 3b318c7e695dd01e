#!/usr/bin/env bash
# Regenerates BENCHMARKS.md: runs every benchmark that bench/BENCHMARKS.tmpl
# names (each with its baseline in the same run), keeps the raw output with
# the time, machine and load under bench/results/, and writes the tables.
#
# Usage: bench/run.sh [-run KEY_REGEXP] [-render]
#   -run     make again only the runs whose key matches; the others are read
#            from bench/results/
#   -render  make no run; write BENCHMARKS.md from bench/results/ alone
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./bench/report "$@"
