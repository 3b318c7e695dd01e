#!/usr/bin/env bash
# Runs the MCP over HTTP benchmark: builds clawtool (from the repository's
# main module) and the two peer servers (this module), then runs the load
# generator against all of them, each in a process of its own.
#
# Usage: bench/mcphttp/run.sh [load flags, e.g. -sessions 1,16,64 -duration 3s]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT

(cd "$root" && go build -o "$bin/clawtool" ./cmd/clawtool)
(cd "$here" && go build -o "$bin/mcpgoserver" ./mcpgoserver && go build -o "$bin/sdkserver" ./sdkserver && go build -o "$bin/load" ./load)

# clawtool-again is a second process of the same server, measured the same
# way: how far its row is from clawtool's is the noise of the machine
# during the run, against which the ratios to the baseline are read.
"$bin/load" \
	-server "clawtool=$bin/clawtool serve --http {addr}" \
	-server "clawtool-again=$bin/clawtool serve --http {addr}" \
	-server "go-sdk=$bin/sdkserver -addr {addr}" \
	-server "mcp-go=$bin/mcpgoserver -addr {addr}" \
	-baseline mcp-go "$@"
