// Package bearer makes an HTTP server an OAuth 2.1 resource server: it
// turns a bearer token into the [policy.Principal] the token was issued
// for, and refuses a request without a valid one.
//
// [RequireToken] is the middleware: it verifies the request's token with a
// [TokenVerifier] and puts the principal on the request's context
// ([policy.WithPrincipal]), where every decision of a policy.Authorizer
// reads it. A [JWTVerifier] checks JSON Web Tokens against static keys
// (read from a file with [ReadKeyFile]) and against a [JWKS], the key set
// the authorization server publishes. [ResourceMetadata] serves the RFC
// 9728 document a refused client is pointed to.
package bearer
