#!/usr/bin/env bash
# Short fuzzing sessions for the argument path, schema inference and streamed replies.
# Usage: .ci/fuzz.sh [fuzztime per target, default 20s]. Crashers are written
# to testdata/fuzz/<Target>/ and then run as ordinary seeds by go test.
set -euo pipefail
cd "$(dirname "$0")/.."
t="${1:-20s}"
go test -run '^$' -fuzz '^FuzzDecode$' -fuzztime "$t" ./internal/schema/
go test -run '^$' -fuzz '^FuzzSchemaInference$' -fuzztime "$t" ./internal/schema/
go test -run '^$' -fuzz '^FuzzExecuteArgs$' -fuzztime "$t" .
go test -run '^$' -fuzz '^FuzzValidate$' -fuzztime "$t" ./internal/jsonschema/
go test -run '^$' -fuzz '^FuzzFoldName$' -fuzztime "$t" ./internal/jsontext/
go test -run '^$' -fuzz '^FuzzStreamEvents$' -fuzztime "$t" ./agent/
go test -run '^$' -fuzz '^FuzzParse$' -fuzztime "$t" ./plugins/
go test -run '^$' -fuzz '^FuzzAuditRecordBound$' -fuzztime "$t" ./policy/
go test -run '^$' -fuzz '^FuzzParseAuditHead$' -fuzztime "$t" ./policy/
go test -run '^$' -fuzz '^FuzzAuditArguments$' -fuzztime "$t" ./policy/
