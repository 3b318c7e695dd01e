package helper

// sysSetns is setns(2), which package syscall does not number on 386.
const sysSetns = 346

// sysRecvmsg is recvmsg(2) as a system call of its own (Linux 4.3), which
// package syscall reaches through socketcall on 386.
const sysRecvmsg = 372

// The socket calls the helper makes after it is ready, each a system call
// of its own on 386 since Linux 4.3 (package syscall reaches them through
// socketcall).
const (
	sysSocket  = 359
	sysBind    = 361
	sysListen  = 363
	sysSendmsg = 370
)
