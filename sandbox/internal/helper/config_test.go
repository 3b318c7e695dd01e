package helper

import (
	"reflect"
	"testing"
)

func TestConfigRoundTrip(t *testing.T) {
	c := &Config{
		Argv: []string{"sh", "-c", "echo \x00 é"}, Env: []string{"PATH=/bin"}, Workspace: "/ws",
		ReadOnly: []string{"/a", ""}, Protected: []string{".git/hooks"}, HideDirs: []string{"/run"},
		Layers: UserNS | Seccomp, LandlockRead: []string{"/usr"}, NoTCP: true, Seccomp: []byte{1, 2, 3, 4, 5, 6, 7, 8},
		CPU: 30, FileSize: 1 << 40, OpenFiles: 256, NProc: 0, Data: 512 << 20, Tmp: 64 << 20, Trace: true, ProxyPort: 3128, Budget: 256 << 20,
		InotifyInstances: 16, InotifyWatches: 0, SigPending: 12045, MsgQueue: 102400,
	}
	b := c.Encode()
	got, ok := Decode(b)
	if !ok || !reflect.DeepEqual(got, c) {
		t.Fatalf("Decode(Encode(c)) = %+v, %v; want %+v", got, ok, c)
	}
	// Every truncation and a trailing byte are refused.
	for n := range len(b) {
		if _, ok := Decode(b[:n]); ok {
			t.Errorf("Decode accepted %d of %d bytes", n, len(b))
		}
	}
	if _, ok := Decode(append(b, 0)); ok {
		t.Error("Decode accepted a trailing byte")
	}
}

func FuzzDecode(f *testing.F) {
	f.Add((&Config{Argv: []string{"true"}}).Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		c, ok := Decode(b)
		if ok {
			if _, ok := Decode(c.Encode()); !ok {
				t.Fatal("a decoded configuration does not encode back")
			}
		}
	})
}

func TestExitRoundTrip(t *testing.T) {
	for _, e := range []Exit{{}, {Status: 0x0900, User: 1, Sys: 1 << 40}, {Status: ^uint32(0), User: ^uint64(0), Sys: ^uint64(0), TmpFree: 1, TmpSize: 1 << 26, TmpInodes: ^uint64(0)}} {
		b := e.Encode()
		if len(b) != ExitSize || b[0] != Exited {
			t.Fatalf("Encode(%+v) = %x", e, b)
		}
		if got, ok := DecodeExit(b); !ok || got != e {
			t.Errorf("DecodeExit(Encode(%+v)) = %+v, %v", e, got, ok)
		}
		if _, ok := DecodeExit(b[:ExitSize-1]); ok {
			t.Error("DecodeExit accepted a short record")
		}
		b[0] = Ack
		if _, ok := DecodeExit(b); ok {
			t.Error("DecodeExit accepted a record without its marker")
		}
	}
}
