package helper

// sysSetns is setns(2), which package syscall does not number on amd64.
const sysSetns = 308

// sysRecvmsg is recvmsg(2).
const sysRecvmsg = 47

// The socket calls the helper makes after it is ready.
const (
	sysSocket  = 41
	sysSendmsg = 46
	sysBind    = 49
	sysListen  = 50
)
