package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/miniopenclaw/tool/internal/loopback"
)

// Defaults used when a Model is made without the corresponding setting.
const (
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
	DefaultOpenAIModel      = "gpt-4.1-mini"
	DefaultAnthropicModel   = "claude-sonnet-4-5"
	DefaultMaxTokens        = 4096
	anthropicVersion        = "2023-06-01"
)

// API names the wire protocol a [Model] speaks.
type API string

const (
	// ChatCompletions is OpenAI's Chat Completions API, also served by
	// Ollama, vLLM, llama.cpp's server and many gateways.
	ChatCompletions API = "openai"
	// Messages is Anthropic's Messages API.
	Messages API = "anthropic"
)

// A Model is a model endpoint the agent loop talks to over plain net/http,
// streaming its replies when the agent asks for it ([WithStream]). Make one with [OpenAI], [Anthropic] or [FromEnv]. A
// Model is immutable and safe for concurrent use.
type Model struct {
	api       API
	baseURL   string
	apiKey    string
	name      string
	client    *http.Client
	maxTokens int
}

// A ModelOption configures a [Model].
type ModelOption func(*Model)

// WithHTTPClient sets the HTTP client. The default is a client with a
// 10-minute timeout per request that follows a redirect only within the
// endpoint's origin (scheme, host and port), at most 5 times: a redirect
// elsewhere fails the request, so the API key never reaches another
// address. A client of your own keeps its own redirect policy.
func WithHTTPClient(c *http.Client) ModelOption {
	return func(m *Model) { m.client = c }
}

// WithMaxTokens sets the most tokens the model may generate per turn
// (max_tokens; required by the Messages API, optional for Chat
// Completions, where it is sent only when set). The default for Messages
// is [DefaultMaxTokens].
func WithMaxTokens(n int) ModelOption {
	return func(m *Model) { m.maxTokens = n }
}

// WithBaseURL sets the API's base URL, which means what it means to the
// provider's own SDKs and their OPENAI_BASE_URL and ANTHROPIC_BASE_URL
// variables:
//
//   - for Chat Completions the base includes the version, as in
//     https://api.openai.com/v1 or http://127.0.0.1:11434/v1 (Ollama), and
//     requests go to base + "/chat/completions";
//   - for the Messages API the base is the host without the version, as in
//     https://api.anthropic.com, and requests go to base + "/v1/messages".
func WithBaseURL(u string) ModelOption {
	return func(m *Model) { m.baseURL = strings.TrimRight(u, "/") }
}

// OpenAI returns a Model that speaks Chat Completions to baseURL
// ([DefaultOpenAIBaseURL] when empty; it includes the version, see
// [WithBaseURL]) with the given API key (sent as a
// bearer token; none when empty, as local servers need) and model name
// ([DefaultOpenAIModel] when empty).
func OpenAI(baseURL, apiKey, model string, opts ...ModelOption) *Model {
	m := &Model{api: ChatCompletions, baseURL: DefaultOpenAIBaseURL, apiKey: apiKey, name: model}
	if baseURL != "" {
		m.baseURL = strings.TrimRight(baseURL, "/")
	}
	if m.name == "" {
		m.name = DefaultOpenAIModel
	}
	return m.apply(opts)
}

// Anthropic returns a Model that speaks the Messages API with the given
// API key and model name ([DefaultAnthropicModel] when empty), at
// [DefaultAnthropicBaseURL] unless [WithBaseURL] says otherwise.
func Anthropic(apiKey, model string, opts ...ModelOption) *Model {
	m := &Model{api: Messages, baseURL: DefaultAnthropicBaseURL, apiKey: apiKey, name: model, maxTokens: DefaultMaxTokens}
	if m.name == "" {
		m.name = DefaultAnthropicModel
	}
	return m.apply(opts)
}

func (m *Model) apply(opts []ModelOption) *Model {
	for _, opt := range opts {
		opt(m)
	}
	if m.client == nil {
		m.client = &http.Client{Timeout: 10 * time.Minute, CheckRedirect: sameOriginRedirect}
	}
	return m
}

// maxRedirects bounds the redirects one request to the model follows.
const maxRedirects = 5

// sameOriginRedirect is the redirect policy of the default client: a
// redirect is followed only within the origin (scheme, host and port) of
// the endpoint, at most maxRedirects times. Go's client replays a
// request at a redirect's target with every header but Authorization and
// Cookie, and keeps Authorization for the same host on another port or
// over plain http: the API key (x-api-key, or the bearer token) and the
// conversation would go wherever the endpoint's redirect names.
func sameOriginRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("model API: more than %d redirects", maxRedirects)
	}
	from, to := via[0].URL, req.URL
	if !strings.EqualFold(from.Scheme, to.Scheme) || !strings.EqualFold(from.Host, to.Host) {
		return fmt.Errorf("model API: refused a redirect from %s://%s to another origin, %s://%s: the API key goes only to the configured endpoint",
			from.Scheme, from.Host, to.Scheme, to.Host)
	}
	return nil
}

// API returns the protocol the model speaks.
func (m *Model) API() API { return m.api }

// Name returns the model name sent in requests.
func (m *Model) Name() string { return m.name }

// BaseURL returns the API's base URL.
func (m *Model) BaseURL() string { return m.baseURL }

// ErrNoEndpoint is wrapped by [FromEnv] when no model endpoint is
// configured.
var ErrNoEndpoint = errors.New("no model endpoint is configured")

// EnvHelp says which environment variables configure a model endpoint;
// [FromEnv]'s error for a missing endpoint includes it.
const EnvHelp = `Set one of:
  OPENAI_API_KEY                 for OpenAI (optionally OPENAI_MODEL, default ` + DefaultOpenAIModel + `)
  OPENAI_BASE_URL + OPENAI_MODEL for an OpenAI-compatible server, e.g.
                                 OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL=llama3.2 (Ollama);
                                 OPENAI_API_KEY too if the server wants one
  ANTHROPIC_API_KEY              for Anthropic (optionally ANTHROPIC_MODEL, default ` + DefaultAnthropicModel + `)
A base URL means what it means to the providers' SDKs: OPENAI_BASE_URL includes
/v1 (default ` + DefaultOpenAIBaseURL + `); ANTHROPIC_BASE_URL does not (default
` + DefaultAnthropicBaseURL + `; requests go to ANTHROPIC_BASE_URL/v1/messages).`

// FromEnv returns the Model that environment variables configure, read
// with getenv (os.Getenv in programs). api selects the protocol; when it
// is empty, OPENAI_BASE_URL or OPENAI_API_KEY select [ChatCompletions],
// else ANTHROPIC_API_KEY selects [Messages]. model overrides
// OPENAI_MODEL / ANTHROPIC_MODEL when not empty. OPENAI_BASE_URL and
// ANTHROPIC_BASE_URL set the base URL as the providers' SDKs read them:
// with /v1 for OpenAI, without it for Anthropic (see [WithBaseURL]).
//
// FromEnv returns an error wrapping [ErrNoEndpoint] that includes
// [EnvHelp] when nothing is configured, and an error saying to set
// OPENAI_MODEL when OPENAI_BASE_URL points at a server other than
// OpenAI's and no model is named.
func FromEnv(getenv func(string) string, api API, model string, opts ...ModelOption) (*Model, error) {
	oaBase, oaKey := getenv("OPENAI_BASE_URL"), getenv("OPENAI_API_KEY")
	anKey := getenv("ANTHROPIC_API_KEY")
	if api == "" {
		switch {
		case oaBase != "" || oaKey != "":
			api = ChatCompletions
		case anKey != "":
			api = Messages
		default:
			return nil, fmt.Errorf("%w.\n%s", ErrNoEndpoint, EnvHelp)
		}
	}
	switch api {
	case ChatCompletions:
		if oaBase == "" && oaKey == "" {
			return nil, fmt.Errorf("%w for the OpenAI API.\n%s", ErrNoEndpoint, EnvHelp)
		}
		if model == "" {
			model = getenv("OPENAI_MODEL")
		}
		if model == "" && oaBase != "" && strings.TrimRight(oaBase, "/") != DefaultOpenAIBaseURL {
			return nil, fmt.Errorf("OPENAI_BASE_URL is %s but no model is named: set OPENAI_MODEL to a model that server serves", oaBase)
		}
		return OpenAI(oaBase, oaKey, model, opts...), nil
	case Messages:
		if anKey == "" {
			return nil, fmt.Errorf("%w for the Anthropic API.\n%s", ErrNoEndpoint, EnvHelp)
		}
		if model == "" {
			model = getenv("ANTHROPIC_MODEL")
		}
		if base := getenv("ANTHROPIC_BASE_URL"); base != "" {
			opts = append([]ModelOption{WithBaseURL(base)}, opts...)
		}
		return Anthropic(anKey, model, opts...), nil
	}
	return nil, fmt.Errorf("unknown API %q: use %q or %q", api, ChatCompletions, Messages)
}

// An APIError is a response from the model API with a status other than
// 200.
type APIError struct {
	StatusCode int
	// Body is the start of the response body.
	Body string
}

// Error reports the status and the body.
func (e *APIError) Error() string {
	return fmt.Sprintf("model API answered %d %s: %s", e.StatusCode, http.StatusText(e.StatusCode), e.Body)
}

// maxResponse bounds the response bodies the loop reads, streamed or not.
const maxResponse = 32 << 20

// send sends one request and returns the response when its status is 200;
// any other status is an [*APIError].
func (m *Model) send(ctx context.Context, body []byte) (*http.Response, error) {
	path := "/chat/completions"
	if m.api == Messages {
		path = "/v1/messages"
	}
	if err := keyInClear(m.baseURL, m.apiKey); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.baseURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	switch m.api {
	case ChatCompletions:
		if m.apiKey != "" {
			req.Header.Set("Authorization", "Bearer "+m.apiKey)
		}
	case Messages:
		req.Header.Set("x-api-key", m.apiKey)
		req.Header.Set("anthropic-version", anthropicVersion)
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
		b := string(data)
		if len(b) == 1000 {
			b += "…"
		}
		return nil, &APIError{StatusCode: resp.StatusCode, Body: b}
	}
	return resp, nil
}

// post sends one request and returns the response body.
func (m *Model) post(ctx context.Context, body []byte) ([]byte, error) {
	resp, err := m.send(ctx, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return nil, fmt.Errorf("reading the model's response: %w", err)
	}
	if len(data) > maxResponse {
		return nil, errTooLarge
	}
	return data, nil
}

// errTooLarge is the error for a response larger than maxResponse.
var errTooLarge = fmt.Errorf("the model's response is larger than %d MiB", maxResponse>>20)

// keyInClear refuses to send apiKey to base over plain http unless base
// names this machine (localhost, a loopback address): the key would
// cross the network in clear. Without a key there is nothing to keep.
func keyInClear(base, apiKey string) error {
	if apiKey == "" {
		return nil
	}
	u, err := url.Parse(base)
	if err != nil {
		return fmt.Errorf("model API base URL %q: %w", base, err)
	}
	if !loopback.Cleartext(u) {
		return nil
	}
	return fmt.Errorf("model API at %s: the API key would cross the network in clear; use https, or a loopback address", u.Redacted())
}
