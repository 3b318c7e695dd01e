//go:build linux && !amd64 && !386

package helper

import "syscall"

// sysSetns is setns(2).
const sysSetns = syscall.SYS_SETNS

// sysRecvmsg is recvmsg(2).
const sysRecvmsg = syscall.SYS_RECVMSG
