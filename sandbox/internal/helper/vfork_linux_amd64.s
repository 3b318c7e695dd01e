#include "textflag.h"

// func cloneCommand() (pid uintptr, errno uintptr)
//
// clone(CLONE_VM|CLONE_VFORK|SIGCHLD): the child shares the helper's
// memory, and this thread of the helper waits until the child has called
// execve or exited. Parent and child return on the same stack, so the
// return address is kept in R12 (which the child gets with the parent's
// values) across the call and pushed back by each.
TEXT ·cloneCommand(SB),NOSPLIT|NOFRAME,$0-16
	MOVQ	$0x4111, DI // CLONE_VM (0x100) | CLONE_VFORK (0x4000) | SIGCHLD (17)
	MOVQ	$0, SI
	MOVQ	$0, DX
	MOVQ	$0, R10
	MOVQ	$0, R8
	MOVQ	$0, R9
	MOVQ	$56, AX // SYS_clone
	POPQ	R12
	SYSCALL
	PUSHQ	R12
	CMPQ	AX, $0xfffffffffffff001
	JLS	ok
	MOVQ	$-1, pid+0(FP)
	NEGQ	AX
	MOVQ	AX, errno+8(FP)
	RET
ok:
	MOVQ	AX, pid+0(FP)
	MOVQ	$0, errno+8(FP)
	RET
