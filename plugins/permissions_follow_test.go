package plugins

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPermissionsNext follows the permissions of a configuration through
// a series of reloads: a touch without a change is nothing to do, an
// edit or another file is a change, an unreadable file is a change (so
// that its load fails and says so, keeping the permissions in force),
// a configuration that stops naming one drops nothing, and permissions
// named only after a start without any are reported, not applied.
func TestPermissionsNext(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.cedar"), filepath.Join(dir, "b.cedar")
	write := func(file, text string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(a, "permit (principal, action, resource);")
	write(b, "forbid (principal, action, resource);")
	p := FollowPermissions(a)
	for i, step := range []struct {
		before    func()
		names     string
		want      PermissionsChange
		wantFile  string
		configNil bool
	}{
		{nil, a, PermissionsSame, a, false},
		{func() { write(a, "permit (principal, action, resource);") }, a, PermissionsSame, a, false}, // rewritten, same text
		{func() { write(a, "forbid (principal, action, resource);") }, a, PermissionsChanged, a, false},
		{nil, a, PermissionsSame, a, false},
		{nil, b, PermissionsChanged, b, false},
		{nil, "", PermissionsDropped, b, false},
		{nil, b, PermissionsSame, b, false}, // named again: b stayed in force
		{func() { os.Remove(b) }, b, PermissionsChanged, b, false},
		{nil, b, PermissionsChanged, b, false}, // still unreadable: tried again
		{func() { write(b, "permit (principal, action, resource);") }, b, PermissionsChanged, b, false},
		{nil, "", PermissionsSame, b, true}, // no configuration applied
	} {
		if step.before != nil {
			step.before()
		}
		c := &Config{Permissions: step.names}
		if step.configNil {
			c = nil
		}
		if got, file := p.Next(c); got != step.want || file != step.wantFile {
			t.Errorf("step %d (names %q): %v %q, want %v %q", i, step.names, got, file, step.want, step.wantFile)
		}
	}

	none := FollowPermissions("")
	if got, file := none.Next(&Config{Permissions: a}); got != PermissionsNamed || file != a {
		t.Errorf("started without permissions, a configuration naming %s: %v %q, want PermissionsNamed", a, got, file)
	}
	if got, _ := none.Next(&Config{}); got != PermissionsSame {
		t.Errorf("started without permissions, a configuration naming none: %v, want PermissionsSame", got)
	}
}
