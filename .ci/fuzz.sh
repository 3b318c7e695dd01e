#!/usr/bin/env bash
# A short fuzzing campaign of EVERY fuzz target in the module: the targets
# are discovered with `go test -list '^Fuzz'`, package by package, so a new
# target is run without editing this script. Each runs for FUZZTIME
# (default 30s; any -fuzztime value, such as 10s or 5000x) and gets one
# report line: package, target, wall time (build and seed corpus
# included), result (with the engine's executions and new inputs). The campaign fails when any target finds an input
# (go test writes it to testdata/fuzz/<Target>/ in the package, where it
# then runs as an ordinary seed), or cannot be built or listed.
#
# Usage: [FUZZTIME=30s] [FUZZPARALLEL=N] .ci/fuzz.sh [TIME] [PACKAGE...]
#   TIME     overrides FUZZTIME (the script's old form: .ci/fuzz.sh 60s).
#   PACKAGE  package patterns (default ./...), e.g. ./internal/... .
#   FUZZPARALLEL  fuzzing workers per target (go test -parallel; default
#            GOMAXPROCS).
# Not part of .ci/run: all targets at the default time take about half an
# hour on 2 shared cores (builds of the instrumented binaries included).
set -uo pipefail
cd "$(dirname "$0")/.."

fuzztime="${FUZZTIME:-30s}"
# The old form, .ci/fuzz.sh 60s, still sets the time.
if [ "$#" -gt 0 ] && [[ "$1" =~ ^[0-9]+(ns|us|ms|s|m|h|x)$ ]]; then
	fuzztime="$1"
	shift
fi
if [ "$#" -gt 0 ]; then pkgs=("$@"); else pkgs=(./...); fi
par=()
if [ -n "${FUZZPARALLEL:-}" ]; then par=(-parallel "$FUZZPARALLEL"); fi

logdir="$(mktemp -d "${TMPDIR:-/tmp}/clawtool-fuzz.XXXXXX")"
listing="$logdir/list.txt"

# `go test -list` prints the matching names of a package, then its
# "ok <import path>" line (or "FAIL <import path> ..." when it does not build).
if ! go test -list '^Fuzz' "${pkgs[@]}" >"$listing" 2>&1; then
	echo "fuzz.sh: listing the fuzz targets failed:" >&2
	grep -v '^ok\|no test files' "$listing" >&2
	exit 1
fi
targets=() # "import-path target"
names=()
while IFS= read -r line; do
	case "$line" in
	Fuzz*) names+=("$line") ;;
	ok*)
		pkg="$(printf '%s\n' "$line" | awk '{print $2}')"
		for n in "${names[@]+"${names[@]}"}"; do targets+=("$pkg $n"); done
		names=()
		;;
	esac
done <"$listing"
if [ "${#targets[@]}" -eq 0 ]; then
	echo "fuzz.sh: no fuzz targets found in ${pkgs[*]}" >&2
	exit 1
fi

module="$(go list -m)"
echo "fuzz.sh: ${#targets[@]} targets, -fuzztime $fuzztime each; logs in $logdir"
printf '%-44s %-28s %8s  %s\n' PACKAGE TARGET TIME RESULT
failed=0
start_all=$(date +%s)
for entry in "${targets[@]}"; do
	pkg="${entry% *}"
	name="${entry#* }"
	short="${pkg#"$module"}"
	short=".${short}"
	dir="${short#./}"
	if [ "$dir" = "." ]; then dir=""; fi
	log="$logdir/$(printf '%s' "${dir:-root}" | tr '/' '_')-$name.log"
	t0=$(date +%s.%N)
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "${par[@]+"${par[@]}"}" "$pkg" >"$log" 2>&1
	rc=$?
	t1=$(date +%s.%N)
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1fs", b-a}')
	# The engine's last progress line: "fuzz: elapsed: 10s, execs: 51234 (5117/sec), new interesting: 2 (total: 40)".
	progress="$(grep -o 'elapsed: .*' "$log" | tail -n 1 | sed 's/^elapsed: [^,]*, //; s/ ([0-9]*\/sec)//')"
	if [ "$rc" -eq 0 ]; then
		result="ok${progress:+ ($progress)}"
	else
		failed=$((failed + 1))
		written="$(grep -o 'testdata/fuzz/[^ ]*' "$log" | head -n 1)"
		if [ -n "$written" ]; then
			result="FINDING: ${dir:+$dir/}$written (log: $log)"
		else
			result="FAIL (log: $log)"
		fi
	fi
	printf '%-44s %-28s %8s  %s\n' "$short" "$name" "$secs" "$result"
done
end_all=$(date +%s)
echo "fuzz.sh: ${#targets[@]} targets in $((end_all - start_all))s, $failed failed"
if [ "$failed" -gt 0 ]; then
	echo "fuzz.sh: add each finding as a seed (it is already in testdata/fuzz/) and fix the cause" >&2
	exit 1
fi
