package helper

// sysSetns is setns(2), which package syscall does not number on 386.
const sysSetns = 346

// sysRecvmsg is recvmsg(2) as a system call of its own (Linux 4.3), which
// package syscall reaches through socketcall on 386.
const sysRecvmsg = 372
