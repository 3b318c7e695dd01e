#!/usr/bin/env bash
# Runs the in-process comparison of MCP over HTTP handlers (package inproc
# of this module, which holds mcp-go so that the main module does not):
# clawtool's ServeHTTP in both protocol eras, mcp-go's Streamable HTTP
# handler in its session and stateless modes, and go-sdk's stateless
# handler, called in turn in one run.
#
# Usage: bench/mcphttp/inproc.sh [go test flags, e.g. -benchtime 2000x -count 3]
set -euo pipefail
cd "$(dirname "$0")"
exec go test -run '^$' -bench InProcess "$@" ./inproc
