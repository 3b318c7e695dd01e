package helper

// sysSetns is setns(2), which package syscall does not number on 386.
const sysSetns = 346
