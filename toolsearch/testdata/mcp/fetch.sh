#!/usr/bin/env bash
# Remakes catalog.json and queries_readme.txt of a set (this folder, or the
# folder given, such as ../mcp2) from the npm packages named in its
# servers.txt (pinned versions): installs them into a temporary prefix, lists
# each server's tools over stdio (listtools.mjs), and takes the tool
# sentences of their READMEs (readme_queries.mjs). Needs node and npm.
# The servers get placeholder credentials: listing tools calls no API.
# Usage: toolsearch/testdata/mcp/fetch.sh [DIR]
set -euo pipefail
tools=$(cd "$(dirname "$0")" && pwd)
here=$(cd "${1:-$tools}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
specs=$(awk '!/^#/ {print $2}' "$here/servers.txt")
# shellcheck disable=SC2086
npm install --prefix "$tmp" --no-fund --no-audit --loglevel=error --ignore-scripts $specs >&2
export GITHUB_PERSONAL_ACCESS_TOKEN=x GITLAB_PERSONAL_ACCESS_TOKEN=x SLACK_BOT_TOKEN=x SLACK_TEAM_ID=x \
	GOOGLE_MAPS_API_KEY=x BRAVE_API_KEY=x EVERART_API_KEY=x AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=x \
	AWS_REGION=us-east-1 AIRTABLE_API_KEY=x FIRECRAWL_API_KEY=x TAVILY_API_KEY=x NOTION_TOKEN=x \
	CIRCLECI_TOKEN=x MDB_MCP_CONNECTION_STRING=mongodb://127.0.0.1:27999 \
	LISTTOOLS_TIMEOUT_MS=60000
mkdir -p "$tmp/out"
readmes=()
while read -r server spec bin args; do
	[[ $server == \#* ]] && continue
	# shellcheck disable=SC2086
	node "$tools/listtools.mjs" "$tmp/node_modules/.bin/$bin" $args >"$tmp/out/$server.json"
	readme=$tmp/node_modules/${spec%@*}/README.md
	[[ -f $readme ]] && readmes+=("$server=$readme")
done <"$here/servers.txt"
(cd "$tmp" && node -e '
const fs=require("fs");const servers=[];
for (const line of fs.readFileSync(process.argv[1],"utf8").trim().split("\n")){if(line.startsWith("#"))continue;
 const [server,spec]=line.split(" "); const at=spec.lastIndexOf("@"); const name=spec.slice(0,at);
 const pj=require("./node_modules/"+name+"/package.json");
 servers.push({server,package:name,version:spec.slice(at+1),license:pj.license,tools:JSON.parse(fs.readFileSync("out/"+server+".json","utf8"))});}
process.stdout.write(JSON.stringify({servers}).replace(/\{"name":/g,"\n{\"name\":"));' "$here/servers.txt") >"$here/catalog.json"
{
	echo "# Queries taken from the READMEs the MCP server packages of catalog.json ship (see PROVENANCE.md):"
	echo "# the sentence a README gives for a tool | server__tool. Made by readme_queries.mjs; not edited."
	node "$tools/readme_queries.mjs" "${readmes[@]}" <"$here/catalog.json"
} >"$here/queries_readme.txt"
