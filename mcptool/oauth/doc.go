// Package oauth is the client side of MCP authorization (the
// 2025-11-25 and 2026-07-28 revisions): an OAuth 2.1 client that lets an
// MCP client reach Streamable HTTP servers whose authorization server
// issues bearer tokens.
//
// A [Handler] is the go-sdk's auth.OAuthHandler for one server. Put it in
// the transport and the 401 a server answers starts discovery (RFC 9728
// protected resource metadata, RFC 8414 or OpenID Connect Discovery),
// registration (a pre-registered client, a client ID metadata document,
// or RFC 7591 dynamic registration), the authorization code flow with
// PKCE S256 and the RFC 8707 resource parameter, and the token exchange;
// the request is then sent again with the token:
//
//	lb := &oauth.Loopback{Open: oauth.OpenBrowser(os.Stderr)}
//	defer lb.Close()
//	store, _ := oauth.DefaultDir()
//	h, err := oauth.New(oauth.Config{Server: url, Authorizer: lb, Store: &oauth.FileStore{Dir: store}})
//	t := mcptool.URL(url).(*mcp.StreamableClientTransport)
//	t.OAuthHandler = h
//	c, err := mcptool.Connect(ctx, t)
//
// Its [Authorizer] is the user's part: [Loopback] shows the authorization
// URL (in a browser: [OpenBrowser]) and receives the redirect on
// 127.0.0.1; a host with a user interface of its own implements
// Authorizer itself, and a host that gets its tokens elsewhere passes an
// oauth2.TokenSource of its own to the transport instead (any
// auth.OAuthHandler does). A Handler without an Authorizer uses and
// refreshes the tokens its [Store] holds and, where those do not do,
// fails with [ErrLoginRequired]: that is how a background host runs,
// after a login in the foreground.
//
// A [FileStore] keeps each server's record (registration and tokens) in
// a file of mode 0600 in a directory of mode 0700 under the user's state
// directory ([DefaultDir]), written atomically. Tokens and secrets are
// [Secret] values, which print and log as the redaction marker, and the Handler's
// errors never quote them.
package oauth
