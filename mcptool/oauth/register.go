package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/miniopenclaw/tool/internal/loopback"
)

// Token endpoint client authentication methods.
const (
	authBasic = "client_secret_basic"
	authPost  = "client_secret_post"
	authNone  = "none"
)

// clientInfo is the client a flow uses.
type clientInfo struct {
	Registration string
	ClientID     string
	ClientSecret Secret
	AuthMethod   string
	RedirectURI  string
}

// config returns the oauth2 package's view of the client at meta's endpoints.
func (c clientInfo) config(meta *ServerMetadata, redirect string, scopes []string) *oauth2.Config {
	conf := &oauth2.Config{
		ClientID:    c.ClientID,
		RedirectURL: redirect,
		Scopes:      scopes,
		Endpoint: oauth2.Endpoint{
			AuthURL:   meta.AuthorizationEndpoint,
			TokenURL:  meta.TokenEndpoint,
			AuthStyle: oauth2.AuthStyleInParams,
		},
	}
	switch c.AuthMethod {
	case authBasic:
		conf.ClientSecret = string(c.ClientSecret)
		conf.Endpoint.AuthStyle = oauth2.AuthStyleInHeader
	case authPost:
		conf.ClientSecret = string(c.ClientSecret)
	}
	return conf
}

// secretMethod picks how a client with a secret authenticates at a token
// endpoint that supports the methods listed (RFC 8414: none listed
// means client_secret_basic).
func secretMethod(supported []string) string {
	if len(supported) == 0 || slices.Contains(supported, authBasic) || !slices.Contains(supported, authPost) {
		return authBasic
	}
	return authPost
}

// register returns the client to use with the authorization server of
// meta, in the MCP specification's order: the configured client, a
// client ID metadata document, the dynamic registration made before
// (for the same server and redirect URI), a new dynamic registration.
func (h *Handler) register(ctx context.Context, meta *ServerMetadata, cur *Record, redirect string) (clientInfo, error) {
	switch {
	case h.cfg.ClientID != "":
		c := clientInfo{Registration: registeredInAdvance, ClientID: h.cfg.ClientID, ClientSecret: Secret(h.cfg.ClientSecret), AuthMethod: authNone, RedirectURI: redirect}
		if c.ClientSecret != "" {
			c.AuthMethod = secretMethod(meta.TokenEndpointAuthMethodsSupported)
		}
		return c, nil
	case h.cfg.ClientMetadataURL != "" && meta.ClientIDMetadataDocumentSupported:
		return clientInfo{Registration: registeredByURL, ClientID: h.cfg.ClientMetadataURL, AuthMethod: authNone, RedirectURI: redirect}, nil
	case cur != nil && cur.Registration == registeredDynamic && cur.Issuer == meta.Issuer && cur.RedirectURI == redirect && cur.ClientID != "":
		return clientInfo{Registration: registeredDynamic, ClientID: cur.ClientID, ClientSecret: cur.ClientSecret, AuthMethod: cur.AuthMethod, RedirectURI: redirect}, nil
	case meta.RegistrationEndpoint != "":
		return h.registerDynamic(ctx, meta, redirect)
	}
	return clientInfo{}, fmt.Errorf("oauth: no way to register with %s: it has no registration endpoint, and no client ID (or client metadata URL it accepts) is configured", meta.Issuer)
}

// registerDynamic registers a client (RFC 7591) for redirect.
func (h *Handler) registerDynamic(ctx context.Context, meta *ServerMetadata, redirect string) (clientInfo, error) {
	method := authNone
	if m := meta.TokenEndpointAuthMethodsSupported; len(m) > 0 && !slices.Contains(m, authNone) {
		method = secretMethod(m)
	}
	name := h.cfg.ClientName
	if name == "" {
		name = "clawtool"
	}
	appType := "web"
	if u, err := url.Parse(redirect); err == nil && loopback.Host(u.Hostname()) {
		appType = "native"
	}
	body, _ := json.Marshal(map[string]any{
		"client_name":                name,
		"redirect_uris":              []string{redirect},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": method,
		"application_type":           appType,
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, meta.RegistrationEndpoint, bytes.NewReader(body))
	if err != nil {
		return clientInfo{}, fmt.Errorf("oauth: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := h.http.Do(req)
	if err != nil {
		return clientInfo{}, fmt.Errorf("oauth: registering with %s: %w", meta.Issuer, err)
	}
	defer resp.Body.Close()
	data, err := readBounded(resp.Body)
	if err != nil {
		return clientInfo{}, fmt.Errorf("oauth: registering with %s: %w", meta.Issuer, err)
	}
	var r struct {
		ClientID         string   `json:"client_id"`
		ClientSecret     string   `json:"client_secret"`
		SecretExpiresAt  int64    `json:"client_secret_expires_at"`
		AuthMethod       string   `json:"token_endpoint_auth_method"`
		RedirectURIs     []string `json:"redirect_uris"`
		Error            string   `json:"error"`
		ErrorDescription string   `json:"error_description"`
	}
	decodeErr := decodeJSON(data, &r)
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		msg := fmt.Sprintf("oauth: %s refused the client registration: %s", meta.Issuer, resp.Status)
		if decodeErr == nil && r.Error != "" {
			msg += ": " + shortText(r.Error)
			if r.ErrorDescription != "" {
				msg += " (" + shortText(r.ErrorDescription) + ")"
			}
		}
		return clientInfo{}, fmt.Errorf("%s", msg)
	}
	switch {
	case decodeErr != nil:
		return clientInfo{}, fmt.Errorf("oauth: the client registration of %s: %w", meta.Issuer, decodeErr)
	case r.ClientID == "" || len(r.ClientID) > 1024:
		return clientInfo{}, fmt.Errorf("oauth: %s registered no usable client_id", meta.Issuer)
	case strings.ContainsFunc(r.ClientID, func(c rune) bool { return c < 0x20 || c > 0x7e }):
		// RFC 6749 A.1: client-id is VSCHAR; the record keeps it and
		// `clawtool auth` shows it, so control characters would reach
		// the user's terminal.
		return clientInfo{}, fmt.Errorf("oauth: %s registered a client_id with characters a client ID cannot hold (RFC 6749 A.1: printable ASCII): refused", meta.Issuer)
	case len(r.ClientSecret) > maxTokenBytes:
		return clientInfo{}, fmt.Errorf("oauth: %s issued a client secret longer than %d bytes", meta.Issuer, maxTokenBytes)
	case len(r.RedirectURIs) > 0 && !slices.Contains(r.RedirectURIs, redirect):
		return clientInfo{}, fmt.Errorf("oauth: %s registered the client for the redirect URIs %q, not %s: refused", meta.Issuer, shortText(strings.Join(r.RedirectURIs, " ")), redirect)
	case r.SecretExpiresAt > 0 && time.Unix(r.SecretExpiresAt, 0).Before(time.Now()):
		return clientInfo{}, fmt.Errorf("oauth: %s issued a client secret that has expired already", meta.Issuer)
	}
	c := clientInfo{Registration: registeredDynamic, ClientID: r.ClientID, ClientSecret: Secret(r.ClientSecret), AuthMethod: r.AuthMethod, RedirectURI: redirect}
	switch c.AuthMethod {
	case authBasic, authPost:
		if c.ClientSecret == "" {
			return clientInfo{}, fmt.Errorf("oauth: %s registered the client for %s without a client secret", meta.Issuer, c.AuthMethod)
		}
	case authNone:
		c.ClientSecret = ""
	case "":
		c.AuthMethod = authNone
		if c.ClientSecret != "" {
			c.AuthMethod = secretMethod(meta.TokenEndpointAuthMethodsSupported)
		}
	default:
		return clientInfo{}, fmt.Errorf("oauth: %s registered the client for the token endpoint authentication %q, which this client does not do", meta.Issuer, shortText(c.AuthMethod))
	}
	h.log.Info("oauth: registered a client", "server", h.cfg.Server, "issuer", meta.Issuer, "client_id", c.ClientID, "token_endpoint_auth_method", c.AuthMethod)
	return c, nil
}

// revoke asks rec's authorization server to revoke its refresh token
// and access token (RFC 7009). Revoking the refresh token revokes the
// grant; an access token the server cannot revoke (a self-contained JWT
// answered with unsupported_token_type, RFC 7009 §2.2.1) is then no
// failure: it cannot be renewed, and lapses at its expiry. Without a
// refresh token, such an answer is an error that says so.
func (h *Handler) revoke(ctx context.Context, rec *Record) error {
	client := clientInfo{ClientID: rec.ClientID, ClientSecret: rec.ClientSecret, AuthMethod: rec.AuthMethod}
	refreshRevoked := false
	for _, t := range []struct {
		value Secret
		hint  string
	}{{rec.RefreshToken, "refresh_token"}, {rec.AccessToken, "access_token"}} {
		if t.value == "" {
			continue
		}
		form := url.Values{"token": {string(t.value)}, "token_type_hint": {t.hint}}
		if client.AuthMethod != authBasic {
			form.Set("client_id", client.ClientID)
			if client.AuthMethod == authPost {
				form.Set("client_secret", string(client.ClientSecret))
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, rec.RevocationEndpoint, strings.NewReader(form.Encode()))
		if err != nil {
			return fmt.Errorf("oauth: %w", err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if client.AuthMethod == authBasic {
			req.SetBasicAuth(url.QueryEscape(client.ClientID), url.QueryEscape(string(client.ClientSecret)))
		}
		resp, err := h.http.Do(req)
		if err != nil {
			return fmt.Errorf("oauth: revoking the %s at %s: %w", t.hint, rec.Issuer, h.redact(err))
		}
		data, readErr := readBounded(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			refreshRevoked = refreshRevoked || t.hint == "refresh_token"
			continue
		}
		var e struct {
			Error string `json:"error"`
		}
		if readErr == nil {
			decodeJSON(data, &e)
		}
		if e.Error == "unsupported_token_type" && t.hint == "access_token" {
			if refreshRevoked {
				h.log.Info("oauth: the authorization server revoked the refresh token; it does not revoke access tokens of this kind, which lapse at their expiry", "server", h.cfg.Server, "issuer", rec.Issuer, "expiry", rec.Expiry)
				continue
			}
			return fmt.Errorf("oauth: %s does not revoke access tokens of this kind (unsupported_token_type): the access token stays valid until it expires (%s)", rec.Issuer, rec.Expiry.Format(time.RFC3339))
		}
		msg := fmt.Sprintf("oauth: revoking the %s at %s: %s", t.hint, rec.Issuer, resp.Status)
		if e.Error != "" {
			msg += ": " + shortText(e.Error)
		}
		return h.redact(errors.New(msg), string(rec.AccessToken), string(rec.RefreshToken), string(rec.ClientSecret))
	}
	return nil
}
