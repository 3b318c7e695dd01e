package runstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadRefusesRunsOthersCouldPlant is an attack on clawtool chat
// --resume: a saved run is checksummed but not signed, so anyone who can
// write a file into the store's directory can make one (its messages go
// to the model, its calls are run again). Save refused a directory others
// may write, Load read from it anyway, and neither looked at who owns the
// directory or the file (a directory another user owns, say a root
// clawtool run with the HOME of the user who planted it). Load now
// refuses them as Save does. The control is the same run in a directory
// only its owner may write.
func TestLoadRefusesRunsOthersCouldPlant(t *testing.T) {
	st := stateOf(t)
	id := NewID()
	planted := func(t *testing.T) Store {
		s := Store{Dir: filepath.Join(t.TempDir(), "runs")}
		if err := s.Save(id, st); err != nil {
			t.Fatal(err)
		}
		return s
	}
	t.Run("owner-only directory (control)", func(t *testing.T) {
		if _, err := planted(t).Load(id); err != nil {
			t.Fatalf("Load: %v", err)
		}
	})
	t.Run("directory others may write", func(t *testing.T) {
		s := planted(t)
		os.Chmod(s.Dir, 0o777)
		if _, err := s.Load(id); err == nil || !strings.Contains(err.Error(), "chmod 700") {
			t.Errorf("Load = %v, want refused", err)
		}
	})
	t.Run("run file others may write", func(t *testing.T) {
		s := planted(t)
		os.Chmod(s.file(id), 0o666)
		if _, err := s.Load(id); err == nil || !strings.Contains(err.Error(), "other users") {
			t.Errorf("Load = %v, want refused", err)
		}
	})
	t.Run("directory another user owns", func(t *testing.T) {
		s := planted(t)
		if os.Geteuid() == 0 {
			if err := os.Chown(s.Dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		} else {
			// Not root: a directory root owns, mode 0755, as / is.
			s = Store{Dir: "/"}
		}
		if _, err := s.Load(id); err == nil || !strings.Contains(err.Error(), "another user") {
			t.Errorf("Load = %v, want refused", err)
		}
		if err := s.Save(id, st); err == nil || !strings.Contains(err.Error(), "another user") {
			t.Errorf("Save = %v, want refused", err)
		}
	})
	if os.Geteuid() == 0 {
		t.Run("run file another user owns", func(t *testing.T) {
			s := planted(t)
			if err := os.Chown(s.file(id), 65534, 65534); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Load(id); err == nil || !strings.Contains(err.Error(), "another user") {
				t.Errorf("Load = %v, want refused", err)
			}
		})
	}
}
