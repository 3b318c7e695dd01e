package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/miniopenclaw/tool/internal/showtext"
	"github.com/miniopenclaw/tool/mcptool/oauth"
	"github.com/miniopenclaw/tool/plugins"
)

func runAuth(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "auth", "login|logout|status (SERVER --config FILE | --mcp-url URL)", `Auth manages the OAuth logins of the URL servers of a configuration file
(MCP authorization), or of the server at --mcp-url URL, as the commands'
--mcp-url flag uses it (the same URL, the default account). "login" connects to SERVER without a stored token;
its authorization server's page opens in the browser (the URL is printed
too; --no-browser only prints it), and once you approve, the redirect
comes back to clawtool on 127.0.0.1 and the tokens are kept, mode 0600,
under the user's state directory ($XDG_STATE_HOME/clawtool/oauth, or
~/.local/state/clawtool/oauth). Every other clawtool command that reads
the file then uses and refreshes them, and none of them asks again: a
server whose tokens no longer do fails to load, saying to log in.
"logout" asks the authorization server to revoke the tokens and forgets
them; "status" shows what is stored, never the tokens themselves.

A server's "oauth" object may name a pre-registered "clientId" and
"clientSecret" with the "issuer" they belong to (required), "scopes", a
"redirectPort" and a "principal" (see docs/plugins.md); without one,
clawtool registers itself with the authorization server.`)
	file := fs.String("config", "", "the configuration `FILE`")
	url := fs.String("mcp-url", "", "instead of SERVER and --config, the server at `URL` (Streamable HTTP), as --mcp-url gives it to the other commands")
	noBrowser := fs.Bool("no-browser", false, "with login, print the authorization URL but do not open a browser")
	timeout := fs.Duration("timeout", 5*time.Minute, "with login, how long to wait for the authorization")
	if code := parseFlags(fs, args, e.stdout); code >= 0 {
		return code
	}
	var c *plugins.Config
	var name string
	switch {
	case *url != "" && (*file != "" || fs.NArg() != 1):
		return usageError(fs, "with --mcp-url, want login, logout or status alone, without SERVER or --config")
	case *url != "":
		// The entry the other commands make of --mcp-url.
		name = *url
		c = &plugins.Config{Servers: map[string]plugins.Server{name: {URL: *url}}}
	case fs.NArg() != 2:
		return usageError(fs, "want login, logout or status and a SERVER name")
	case *file == "":
		return usageError(fs, "--config FILE is required")
	default:
		name = fs.Arg(1)
	}
	verb := fs.Arg(0)
	if verb != "login" && verb != "logout" && verb != "status" {
		return usageError(fs, "unknown auth command %q: want login, logout or status", verb)
	}
	if c == nil {
		var err error
		if c, err = plugins.ReadFile(*file); err != nil {
			fmt.Fprintf(e.stderr, "clawtool auth: %v\n", err)
			return exitToolError
		}
	}
	fail := func(err error) int {
		fmt.Fprintf(e.stderr, "clawtool auth %s: %s\n", verb, c.Redact(err.Error()))
		return exitToolError
	}
	switch verb {
	case "login":
		open := oauth.OpenBrowser(e.stderr)
		if *noBrowser {
			open = func(_ context.Context, authURL string) error {
				fmt.Fprintf(e.stderr, "Open this URL in a browser to authorize clawtool:\n\n  %s\n\nWaiting for the authorization...\n", authURL)
				return nil
			}
		}
		lctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		res, err := plugins.Login(lctx, c, name, plugins.LoginOptions{Open: open})
		if err != nil {
			return fail(err)
		}
		if !res.Authorized {
			fmt.Fprintf(e.stdout, "%s did not ask for an authorization; it lists %d tools\n", name, res.Tools)
			return exitOK
		}
		// What the servers wrote is shown escaped (showtext): a record
		// kept by an older clawtool may hold control characters.
		fmt.Fprintf(e.stdout, "logged in to %s at %s (scopes: %s; %s); it lists %d tools\n",
			name, showtext.Line(res.Issuer), orDash(showtext.Line(strings.Join(res.Scopes, " "))), expiryText(res.Expiry, res.Refreshable), res.Tools)
	case "logout":
		res, err := plugins.Logout(ctx, c, name, nil)
		if err != nil {
			return fail(err)
		}
		switch {
		case !res.Removed:
			fmt.Fprintf(e.stdout, "%s: not logged in\n", name)
		case res.Revoked:
			fmt.Fprintf(e.stdout, "logged out of %s; the authorization server revoked the tokens\n", name)
		case res.RevokeErr != nil:
			fmt.Fprintf(e.stdout, "logged out of %s; the tokens are forgotten, but revoking them failed: %s\n", name, c.Redact(res.RevokeErr.Error()))
		default:
			fmt.Fprintf(e.stdout, "logged out of %s (its authorization server offers no revocation)\n", name)
		}
	case "status":
		rec, err := plugins.AuthStatus(ctx, c, name, nil)
		if err != nil {
			return fail(err)
		}
		if rec == nil || rec.AccessToken == "" {
			fmt.Fprintf(e.stdout, "%s: not logged in\n", name)
			if rec == nil {
				return exitToolError
			}
			fmt.Fprintf(e.stdout, "registered with %s as client %s (%s)\n", showtext.Line(rec.Issuer), showtext.Line(rec.ClientID), showtext.Line(rec.Registration))
			return exitToolError
		}
		fmt.Fprintf(e.stdout, "%s: logged in at %s as client %s (%s)\nresource: %s\nscopes: %s\ntoken: %s\n",
			name, showtext.Line(rec.Issuer), showtext.Line(rec.ClientID), showtext.Line(rec.Registration), showtext.Line(rec.Resource),
			orDash(showtext.Line(strings.Join(rec.Scopes, " "))), expiryText(rec.Expiry, rec.RefreshToken != ""))
	}
	return exitOK
}

// expiryText says when a token expires and whether it can be refreshed.
func expiryText(expiry time.Time, refreshable bool) string {
	s := "does not expire"
	if !expiry.IsZero() {
		s = "expires " + expiry.Local().Format(time.RFC3339)
	}
	if refreshable {
		return s + ", refreshable"
	}
	return s + ", not refreshable"
}
