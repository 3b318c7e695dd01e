// An OAuth 2.1 authorization server for the end-to-end test of clawtool's
// MCP authorization client (cmd/clawtool/oauth_e2e_peers_test.go): the
// npm package oidc-provider, installed by .ci/mcp-peers.sh, on
// 127.0.0.1 only. Its one user ("alice") logs in and consents at once:
// the interaction pages answer with the result instead of a form.
//
//	node server.mjs PROVIDER_DIR ACCESS_TOKEN_TTL_SECONDS
//
// It prints one JSON line on standard output when it listens:
// {"issuer": "http://127.0.0.1:PORT"}, and stops when standard input
// closes (so it never outlives the test that started it).
//
// It registers clients dynamically (RFC 7591, open registration) and
// knows one client registered in advance, "pre-registered" with the
// secret "pre-registered-secret" (client_secret_basic) and the redirect
// URI given in the environment variable PRE_REGISTERED_REDIRECT, when
// that is set. Access tokens for a resource (RFC 8707) are JWTs signed
// with ES256 whose audience is the resource, for the scope "tools".
// Each token grant, failed grant and revoked grant is a JSON line on
// standard error.
import { createServer } from 'node:http';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';

const [dir, ttlArg] = process.argv.slice(2);
if (!dir || !ttlArg) {
  console.error('usage: node server.mjs PROVIDER_DIR ACCESS_TOKEN_TTL_SECONDS');
  process.exit(2);
}
const ttl = Number(ttlArg);
const require = createRequire(join(dir, 'package.json'));
const { default: Provider } = await import(pathToFileURL(require.resolve('oidc-provider')).href);

const jwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });
jwk.kid = randomUUID();
jwk.alg = 'ES256';
jwk.use = 'sig';

const server = createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const clients = [];
if (process.env.PRE_REGISTERED_REDIRECT) {
  clients.push({
    client_id: 'pre-registered',
    client_secret: 'pre-registered-secret',
    redirect_uris: [process.env.PRE_REGISTERED_REDIRECT],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
    application_type: 'native',
  });
}

const provider = new Provider(issuer, {
  clients,
  // Its one signing key is an ES256 key.
  clientDefaults: { id_token_signed_response_alg: 'ES256', grant_types: ['authorization_code'], response_types: ['code'] },
  jwks: { keys: [jwk] },
  scopes: ['openid', 'offline_access', 'tools'],
  findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async (_ctx, _client, oneOf) => oneOf,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, resource) => ({
        scope: 'tools',
        audience: resource,
        accessTokenTTL: ttl,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'ES256' } },
      }),
    },
  },
  // A refresh token for every client that may use one, without asking
  // for offline_access (as MCP clients do not).
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  ttl: {
    AccessToken: ttl,
    AuthorizationCode: 60,
    Grant: 3600,
    IdToken: 3600,
    Interaction: 600,
    RefreshToken: 3600,
    Session: 3600,
  },
  interactions: { url: async (_ctx, interaction) => `/interaction/${interaction.uid}` },
});

// The user's part, approved at once: log in as alice, then grant every
// scope the provider says is missing (the OpenID scopes and claims,
// and each resource's scopes).
async function interact(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  if (prompt.name === 'login') {
    await provider.interactionFinished(req, res, { login: { accountId: 'alice' } }, { mergeWithLastSubmission: false });
    return;
  }
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const { missingOIDCScope, missingOIDCClaims, missingResourceScopes } = prompt.details;
  if (missingOIDCScope) grant.addOIDCScope(missingOIDCScope.join(' '));
  if (missingOIDCClaims) grant.addOIDCClaims(missingOIDCClaims);
  for (const [resource, scopes] of Object.entries(missingResourceScopes || {})) {
    grant.addResourceScope(resource, scopes.join(' '));
  }
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

// Each token grant and revocation, one JSON line on standard error, so
// the test can count the refreshes.
provider.on('grant.success', (ctx) => {
  console.error(JSON.stringify({ event: 'grant', grant_type: ctx.oidc.params.grant_type, client_id: ctx.oidc.client?.clientId }));
});
provider.on('grant.error', (ctx, err) => {
  console.error(JSON.stringify({ event: 'grant.error', grant_type: ctx.oidc.params?.grant_type, error: err.message }));
});
provider.on('grant.revoked', (_ctx, grantId) => {
  console.error(JSON.stringify({ event: 'revoked', grant: grantId }));
});

const callback = provider.callback();
server.on('request', (req, res) => {
  if (req.url.startsWith('/interaction/')) {
    interact(req, res).catch((err) => {
      res.statusCode = 500;
      res.end(String(err));
    });
    return;
  }
  callback(req, res);
});

process.stdout.write(JSON.stringify({ issuer }) + '\n');
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
process.stdin.on('close', () => process.exit(0));
