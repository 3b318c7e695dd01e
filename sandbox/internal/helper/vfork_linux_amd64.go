package helper

// cloneCommand clones the command's child sharing the helper's memory,
// the calling thread suspended until the child's execve or exit (see
// vfork_linux_amd64.s): no copy of the helper's page tables for a child
// that only calls execve, and none of the copy-on-write faults after. It
// returns the child's process id in the parent and 0 in the child, which
// may make raw system calls only, on this stack below the caller's frame.
// It must be called directly, as forkExec does (the compiler then calls
// the assembly itself): a call through a function value goes through an
// ABI wrapper, whose return address on the stack the child's calls would
// overwrite before the parent returns through it.
func cloneCommand() (pid uintptr, errno uintptr)

// sharedMemory tells whether cloneCommand's child shares the helper's
// memory: it then resets the signal handlers the runtime installed before
// it unblocks signals (see forkExec).
const sharedMemory = true
