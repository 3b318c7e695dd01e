#!/usr/bin/env bash
# Interop proof for the provider adapters: the nested module interop/ decodes
# our definitions, calls and results into the official SDK types (openai-go,
# anthropic-sdk-go, genai) and checks nothing is lost. It is a separate module
# so the main module never depends on a vendor SDK.
#
# -mod=mod lets go add requirements that the main module (replaced by ../)
# gained since interop/go.mod was last tidied, instead of failing.
set -euo pipefail
cd "$(dirname "$0")/../interop"
go vet -mod=mod ./...
go test -mod=mod -race -count=1 ./...
