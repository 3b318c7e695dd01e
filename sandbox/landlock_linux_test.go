package sandbox

import (
	"testing"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"github.com/miniopenclaw/tool/sandbox/internal/helper"
)

// TestLandlockRights checks the helper's raw Landlock rights against
// go-landlock's: the handled sets are those of ABI 6, and the sets granted
// are the ones go-landlock's RODirs, ROFiles, RWDirs and RWFiles grant.
func TestLandlockRights(t *testing.T) {
	read := uint64(ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir)
	write := uint64(ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar |
		ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock |
		ll.AccessFSMakeSym | ll.AccessFSTruncate)
	file := uint64(ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSReadFile)
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"handled fs", helper.HandledFS, uint64(landlock.V6.HandledAccessFS)},
		{"handled net", helper.HandledNet, uint64(landlock.V6.HandledAccessNet)},
		{"scoped", helper.Scoped, uint64(landlock.V6.Scoped)},
		{"read dirs", helper.ReadDirs, read},
		{"read files", helper.ReadFiles, read & file},
		{"write dirs", helper.WriteDirs, read | write},
		{"write files", helper.WriteFiles, (read | write) & file},
	} {
		if c.got != c.want {
			t.Errorf("%s: %#x, want %#x", c.name, c.got, c.want)
		}
	}
}
