//go:build linux && !amd64 && !386

package helper

import "syscall"

// sysSetns is setns(2).
const sysSetns = syscall.SYS_SETNS

// sysRecvmsg is recvmsg(2).
const sysRecvmsg = syscall.SYS_RECVMSG

// The socket calls the helper makes after it is ready.
const (
	sysSocket  = syscall.SYS_SOCKET
	sysSendmsg = syscall.SYS_SENDMSG
	sysBind    = syscall.SYS_BIND
	sysListen  = syscall.SYS_LISTEN
)
