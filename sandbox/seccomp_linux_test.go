package sandbox

import (
	"encoding/binary"
	"testing"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestSeccompFence runs the filter in a BPF interpreter on the fields
// seccomp reads (the number and the architecture): every number of the
// table gets the library's own answer, and what the table does not model
// gets ENOSYS: numbers above it, x32 numbers (bit 30) and every call of
// another architecture. The control runs the library's program alone on
// the same inputs and allows those (its DefaultAction), which is what the
// attack rows A54 exploited on a real kernel.
func TestSeccompFence(t *testing.T) {
	info, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	enosys := int(uint32(seccomp.ActionErrno) | uint32(unix.ENOSYS))
	allow := int(uint32(seccomp.ActionAllow))
	for _, key := range []seccompKey{{false, NetworkNone}, {true, NetworkAllow}, {false, NetworkHost}} {
		p := seccompPolicy(key.denyUnix, key.network)
		lib, err := p.Assemble()
		if err != nil {
			t.Fatal(err)
		}
		fence, err := seccompFence(info)
		if err != nil {
			t.Fatal(err)
		}
		libVM, err := bpf.NewVM(lib)
		if err != nil {
			t.Fatal(err)
		}
		fullVM, err := bpf.NewVM(append(fence, lib...))
		if err != nil {
			t.Fatal(err)
		}
		// The interpreter loads in network byte order; seccomp_data's
		// first two fields are the number and the architecture.
		data := func(nr, arch uint32) []byte {
			b := make([]byte, 64)
			binary.BigEndian.PutUint32(b[0:], nr)
			binary.BigEndian.PutUint32(b[4:], arch)
			return b
		}
		run := func(vm *bpf.VM, nr, arch uint32) int {
			t.Helper()
			v, err := vm.Run(data(nr, arch))
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		top := uint32(tableMax(info))
		native := uint32(info.ID)
		gaps := 0
		for nr := uint32(0); nr <= top; nr++ {
			if _, known := info.SyscallNumbers[int(nr)]; !known {
				gaps++
				if got := run(fullVM, nr, native); got != enosys {
					t.Errorf("%v: call %d, which the table does not name: %#x, want ENOSYS", key, nr, got)
				}
				if got := run(libVM, nr, native); got != allow {
					t.Errorf("control: call %d, which the table does not name, gets %#x without the fence, want allow", nr, got)
				}
				continue
			}
			if got, want := run(fullVM, nr, native), run(libVM, nr, native); got != want {
				t.Errorf("%v: call %d: %#x with the fence, %#x without: the fence changed a call the table models", key, nr, got, want)
			}
		}
		t.Logf("%v: %d numbers below %d the table does not name", key, gaps, top)
		unmodeled := []struct {
			name     string
			nr, arch uint32
		}{
			{"the first number above the table", top + 1, native},
			{"a number far above the table", top + 1000, native},
			{"the largest number", ^uint32(0), native},
			{"x32 read", 0x40000000, native},
			{"x32 above the table", 0x40000000 | (top + 1), native},
			{"i386 ptrace", 26, uint32(arch.I386.ID)},
			{"arm (aarch32) ptrace", 26, uint32(arch.ARM.ID)},
			{"another architecture's read", 0, native ^ 1},
		}
		for _, u := range unmodeled {
			if got := run(fullVM, u.nr, u.arch); got != enosys {
				t.Errorf("%v: %s: %#x, want ENOSYS (%#x)", key, u.name, got, enosys)
			}
		}
		// Control: the library's program alone lets the calls of another
		// architecture and the numbers above its table through.
		if got := run(libVM, top+1, native); got != allow {
			t.Errorf("control: %#x for the first number above the table without the fence, want allow", got)
		}
		if got := run(libVM, 26, uint32(arch.I386.ID)); got != allow {
			t.Errorf("control: %#x for i386 ptrace without the fence, want allow", got)
		}
	}
}
