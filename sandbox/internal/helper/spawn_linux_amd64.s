#include "textflag.h"

// func cloneSpawn(flags, stack uintptr, prog *spawnProg) (pid uintptr, errno uintptr)
//
// clone(flags, stack): with CLONE_VM in flags the child shares the
// forker's memory and runs on stack, a region of its own, the caller's
// thread going on at once. The parent returns the child's process id. The
// child never returns: it makes the system calls prog lists, in order,
// each with raw registers only (no Go code, no Go stack), and stops at the
// first whose result is an error or is not the one it wants; then it
// writes the error number and the call's index (8 bytes each, at
// prog.fail) to prog.errfd and exits with 253. The last call is its
// execve, which does not return when it succeeds.
TEXT ·cloneSpawn(SB),NOSPLIT,$0-40
	MOVQ	flags+0(FP), DI
	MOVQ	stack+8(FP), SI
	MOVQ	prog+16(FP), R12 // the child gets the parent's registers
	MOVQ	$0, DX
	MOVQ	$0, R10
	MOVQ	$0, R8
	MOVQ	$0, R9
	MOVQ	$56, AX // SYS_clone
	SYSCALL
	CMPQ	AX, $0
	JEQ	child
	CMPQ	AX, $-4096
	JHI	failed // -4095..-1: an error number
	MOVQ	AX, pid+24(FP)
	MOVQ	$0, errno+32(FP)
	RET
failed:
	MOVQ	$-1, pid+24(FP)
	NEGQ	AX
	MOVQ	AX, errno+32(FP)
	RET

child:
	MOVQ	0(R12), R13 // prog.ops
	MOVQ	8(R12), R14 // prog.n
	MOVQ	$0, R15     // the index of the call
next:
	CMPQ	R15, R14
	JAE	ran // every call made and none replaced the child: an error
	MOVQ	R15, BX
	SHLQ	$6, BX // a spawnOp is 64 bytes
	ADDQ	R13, BX
	MOVQ	0(BX), AX
	MOVQ	8(BX), DI
	MOVQ	16(BX), SI
	MOVQ	24(BX), DX
	MOVQ	32(BX), R10
	MOVQ	40(BX), R8
	MOVQ	48(BX), R9
	SYSCALL
	MOVQ	R15, BX
	SHLQ	$6, BX
	ADDQ	R13, BX
	MOVQ	56(BX), CX // what the call must return
	CMPQ	CX, $-2
	JEQ	done // any result, an error too
	CMPQ	AX, $-4096
	JHI	errno
	CMPQ	CX, $-1
	JEQ	done // any result that is not an error
	CMPQ	AX, CX
	JEQ	done
	MOVQ	$22, AX // EINVAL: not the result wanted
	JMP	fail
errno:
	NEGQ	AX
	JMP	fail
done:
	INCQ	R15
	JMP	next
ran:
	MOVQ	$22, AX
fail:
	MOVQ	AX, 24(R12) // prog.fail[0]
	MOVQ	R15, 32(R12) // prog.fail[1]
	MOVQ	16(R12), DI // prog.errfd
	LEAQ	24(R12), SI
	MOVQ	$16, DX
	MOVQ	$1, AX // SYS_write
	SYSCALL
exit:
	MOVQ	$253, DI
	MOVQ	$231, AX // SYS_exit_group: the child's own group, not the forker's
	SYSCALL
	JMP	exit
