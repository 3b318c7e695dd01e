package helper

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestForkCommandRaw holds the helper in fork mode to raw system calls
// from the moment it forks the command to its record: every function of
// the package forkCommand reaches calls no function of package syscall
// but the raw ones (and Exit, a raw exit_group). A call through
// syscall.Syscall that the kernel preempts lets the runtime hand its
// processor to a new thread, which a process limit the command has filled
// refuses, and the helper dies (see startCommand): syscall.ForkExec,
// which forkCommand called before, reads its child's report that way, as
// do syscall.Statfs, Read, Write and the like. A control run from a
// function that calls syscall.ForkExec shows the walk finds such calls.
func TestForkCommandRaw(t *testing.T) {
	funcs := parsePackage(t)
	if got := nonRaw(funcs, "forkCommand"); len(got) != 0 {
		t.Errorf("forkCommand reaches %v; want only raw system calls", got)
	}
	// Control: the same walk from a function calling syscall.ForkExec.
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "control.go", `package helper
import "syscall"
func control() { syscall.ForkExec("/bin/true", nil, nil); closeFD(0) }`, 0)
	if err != nil {
		t.Fatal(err)
	}
	funcs["control"] = f.Decls[1].(*ast.FuncDecl)
	if got := nonRaw(funcs, "control"); !slices.Equal(got, []string{"control: syscall.ForkExec"}) {
		t.Errorf("control reaches %v; want [control: syscall.ForkExec]", got)
	}
}

// TestRunRaw holds the whole helper to raw system calls, from its start
// to the command: once it is ready (Ready) the run counts its tasks into
// the process limit, and a thread its runtime started after that, on a
// call through syscall.Syscall that the kernel preempted under load, came
// out of the command's allowance, or was refused by a limit the command
// had filled and the helper died ("runtime/cgo: pthread_create failed").
// The budget's tmpfs went to the supervisor by syscall.Sendmsg, and the
// proxy's listener by Socket, Bind, Listen and Sendmsg. The control adds
// such a call to a function run reaches.
func TestRunRaw(t *testing.T) {
	funcs := parsePackage(t)
	if got := nonRaw(funcs, "run"); len(got) != 0 {
		t.Errorf("run reaches %v; want only raw system calls", got)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "control.go", `package helper
import "syscall"
func sendFD(sock int, tag byte, fd int) error { return syscall.Sendmsg(sock, []byte{tag}, syscall.UnixRights(fd), nil, 0) }`, 0)
	if err != nil {
		t.Fatal(err)
	}
	funcs["sendFD"] = f.Decls[1].(*ast.FuncDecl)
	if got := nonRaw(funcs, "run"); !slices.Equal(got, []string{"sendFD: syscall.Sendmsg"}) {
		t.Errorf("control: run reaches %v; want the Sendmsg of the old sendFD", got)
	}
}

// parsePackage returns the functions of the package's non-test files by
// name.
func parsePackage(t *testing.T) map[string]*ast.FuncDecl {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	funcs := map[string]*ast.FuncDecl{}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				funcs[fd.Name.Name] = fd
			}
		}
	}
	return funcs
}

// nonRaw walks the package's functions reachable from root by plain calls
// and returns, as "function: syscall.Name", each call to package syscall
// that is neither raw nor a conversion or a pure helper.
func nonRaw(funcs map[string]*ast.FuncDecl, root string) []string {
	allowed := map[string]bool{
		"RawSyscall": true, "RawSyscall6": true, "Exit": true,
		"Errno": true, "WaitStatus": true, "BytePtrFromString": true,
		// Pure: they build or parse bytes, or read the environment's copy.
		"UnixRights": true, "CmsgSpace": true, "ParseSocketControlMessage": true,
		"ParseUnixRights": true, "Getenv": true,
		// Raw in package syscall (sysnb): prlimit64 and getpid.
		"Setrlimit": true, "Getpid": true,
	}
	var found []string
	seen := map[string]bool{root: true}
	queue := []string{root}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if funcs[name].Body == nil {
			continue // declared here, written in assembly: no calls of package syscall
		}
		ast.Inspect(funcs[name].Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			switch fn := call.Fun.(type) {
			case *ast.Ident:
				if _, ok := funcs[fn.Name]; ok && !seen[fn.Name] {
					seen[fn.Name] = true
					queue = append(queue, fn.Name)
				}
			case *ast.SelectorExpr:
				if x, ok := fn.X.(*ast.Ident); ok && x.Name == "syscall" && !allowed[fn.Sel.Name] {
					found = append(found, name+": syscall."+fn.Sel.Name)
				}
			}
			return true
		})
	}
	slices.Sort(found)
	return found
}
