package helper

// sysSetns is setns(2), which package syscall does not number on amd64.
const sysSetns = 308

// sysRecvmsg is recvmsg(2).
const sysRecvmsg = 47
