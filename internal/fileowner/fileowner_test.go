package fileowner

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fakeInfo is a FileInfo whose Sys is not a Stat_t: an owner that cannot
// be read.
type fakeInfo struct{}

func (fakeInfo) Name() string       { return "f" }
func (fakeInfo) Size() int64        { return 0 }
func (fakeInfo) Mode() fs.FileMode  { return 0o600 }
func (fakeInfo) ModTime() time.Time { return time.Time{} }
func (fakeInfo) IsDir() bool        { return false }
func (fakeInfo) Sys() any           { return nil }

func TestOwnFileAndUnreadableOwner(t *testing.T) {
	if !ModesSayWho {
		if _, other := Other(fakeInfo{}); other {
			t.Error("a file has another owner where modes say nothing of owners")
		}
		return
	}
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	if uid, other := Other(fi); other || uid != os.Geteuid() {
		t.Errorf("Other of our own file = %d, %v", uid, other)
	}
	if uid, ok := Trusted(fi); !ok || uid != os.Geteuid() {
		t.Errorf("Trusted of our own file = %d, %v", uid, ok)
	}
	if _, other := Other(fakeInfo{}); !other {
		t.Error("an owner that cannot be read is not another's")
	}
	if _, ok := Trusted(fakeInfo{}); ok {
		t.Error("an owner that cannot be read is trusted")
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(name, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		fi, _ = os.Stat(name)
		if uid, other := Other(fi); !other || uid != 4242 {
			t.Errorf("Other of user 4242's file = %d, %v", uid, other)
		}
		if _, ok := Trusted(fi); ok {
			t.Error("user 4242's file is trusted")
		}
	}
}
