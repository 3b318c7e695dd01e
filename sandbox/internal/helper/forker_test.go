package helper

import (
	"strings"
	"testing"
)

// A request survives its encoding, and the decoder refuses what the
// forker must not start; each refusal has a control that passes.
func TestForkRequest(t *testing.T) {
	good := ForkRequest{Flags: cloneNewUser | cloneNewPID | 0x00020000, UID: 65534, GID: 65534, Bits: ForkMounts | ForkFork | ForkTraceFD, Tag: 0x0123456789abcdef}
	if r, why := DecodeForkRequest(good.Encode()); why != "" || r != good {
		t.Fatalf("control: %+v %q", r, why)
	}
	if good.Files() != 5 {
		t.Errorf("Files = %d, want 5", good.Files())
	}
	for _, tt := range []struct {
		name string
		mod  func(*ForkRequest)
		want string
	}{
		{"no user namespace", func(r *ForkRequest) { r.Flags = cloneNewPID }, "clone flags"},
		{"no PID namespace", func(r *ForkRequest) { r.Flags = cloneNewUser }, "clone flags"},
		{"CLONE_VM", func(r *ForkRequest) { r.Flags |= 0x100 }, "clone flags"},
		{"root uid", func(r *ForkRequest) { r.UID = 0 }, "host's root"},
		{"root gid", func(r *ForkRequest) { r.GID = 0 }, "host's root"},
		{"fork without mounts", func(r *ForkRequest) { r.Bits = ForkFork }, "fork mode"},
		{"unknown bit", func(r *ForkRequest) { r.Bits |= 0x80 }, "unknown"},
	} {
		r := good
		tt.mod(&r)
		if _, why := DecodeForkRequest(r.Encode()); !strings.Contains(why, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, why, tt.want)
		}
	}
	if why := ForkerHelloOK(append([]byte{ForkerHello}, protocol...)); why != "" {
		t.Errorf("control hello: %q", why)
	}
	if why := ForkerHelloOK([]byte("Hother")); !strings.Contains(why, "built from other sources") {
		t.Errorf("other hello: %q", why)
	}
}

// FuzzDecodeForkRequest: any bytes decode to a refusal or to a request
// that encodes back to the same bytes and passes every check.
func FuzzDecodeForkRequest(f *testing.F) {
	f.Add(ForkRequest{Flags: cloneNewUser | cloneNewPID, UID: 1, GID: 1}.Encode())
	f.Add([]byte("CTFK"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, why := DecodeForkRequest(b)
		if why != "" {
			return
		}
		if string(r.Encode()) != string(b) {
			t.Fatalf("accepted %q, which encodes as %q", b, r.Encode())
		}
		if r.UID == 0 || r.GID == 0 || r.Flags&^ForkNamespaces != 0 || r.Files() > ForkMaxFiles {
			t.Fatalf("accepted %+v", r)
		}
	})
}

// CloneName is a whole comm (15 bytes, the kernel's limit without its
// NUL), printable, and tells tags apart by their low 44 bits.
func TestCloneName(t *testing.T) {
	for _, c := range []struct {
		tag  uint64
		want string
	}{
		{0, "ctfk00000000000"},
		{0x0123456789abcdef, "ctfk56789abcdef"},
		{^uint64(0), "ctfkfffffffffff"},
	} {
		if got := CloneName(c.tag); got != c.want {
			t.Errorf("CloneName(%#x) = %q, want %q", c.tag, got, c.want)
		}
	}
}
