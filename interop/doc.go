// Package interop holds tests that prove the wire shapes of the provider
// adapters (openaitool, anthropictool, geminitool, mcptool) decode into the
// vendors' official Go SDK types without loss, and that tool calls in the
// SDKs' own response types convert into tool.Calls. It is a separate module
// so that the main module does not depend on any vendor SDK.
package interop
