//go:build !unix

package policy

func processStart(int) string { return "" }

// processGone cannot tell here: no claim is ever interrupted.
func processGone(ApprovalClaim) bool { return false }
