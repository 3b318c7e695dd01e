package plugins

import (
	"bytes"
	"sync"

	"github.com/miniopenclaw/tool/internal/boundedfile"
)

// maxPermissionsBytes bounds the permissions file a Permissions reads to
// compare it; a longer one counts as changed on every reload.
const maxPermissionsBytes = 4 << 20

// A PermissionsChange is what a reloaded configuration asks of the
// permissions in force (see [Permissions.Next]).
type PermissionsChange int

// The changes of the permissions a configuration names.
const (
	// PermissionsSame: nothing to do; the same file, with the same text.
	PermissionsSame PermissionsChange = iota
	// PermissionsChanged: the configuration names another file, or the
	// file's text changed (or cannot be read): load it again. A load
	// that fails keeps the permissions in force.
	PermissionsChanged
	// PermissionsNamed: the configuration names permissions although
	// none were in force when the program started; they are not applied
	// (a program that ran without permissions does not start deciding
	// calls halfway), only reported: they apply from the next start.
	PermissionsNamed
	// PermissionsDropped: the configuration no longer names permissions;
	// those in force stay until the next start (an edit never drops
	// them).
	PermissionsDropped
)

// Permissions follows the permissions file (see [Config.Permissions])
// across the reloads of a configuration, failing closed: it says when to
// load the file again, and never to drop permissions in force. A
// Permissions is safe for concurrent use.
type Permissions struct {
	mu   sync.Mutex
	file string // the file in force; "" when none is
	src  []byte // its text when last read, nil if it could not be read
}

// FollowPermissions returns a Permissions whose file in force is file,
// the permissions the program applied at start ("" when it applied
// none), with the text it has now.
func FollowPermissions(file string) *Permissions {
	p := &Permissions{file: file}
	if file != "" {
		p.src = readPermissions(file)
	}
	return p
}

// Next says what the configuration c, just applied by a reload, asks of
// the permissions in force, and returns the file it names (for
// PermissionsDropped, the file still in force). With PermissionsChanged
// the file named becomes the file in force, with its text now.
func (p *Permissions) Next(c *Config) (PermissionsChange, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case c == nil:
		return PermissionsSame, p.file
	case p.file == "" && c.Permissions != "":
		return PermissionsNamed, c.Permissions
	case p.file == "":
		return PermissionsSame, ""
	case c.Permissions == "":
		return PermissionsDropped, p.file
	}
	src := readPermissions(c.Permissions)
	if c.Permissions == p.file && src != nil && bytes.Equal(src, p.src) {
		return PermissionsSame, p.file
	}
	p.file, p.src = c.Permissions, src
	return PermissionsChanged, p.file
}

// readPermissions returns the text of file, or nil when it cannot be
// read or is longer than maxPermissionsBytes.
func readPermissions(file string) []byte {
	b, err := boundedfile.Read(file, maxPermissionsBytes)
	if err != nil {
		return nil
	}
	return b
}
