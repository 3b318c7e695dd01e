package main

import (
	"fmt"

	"github.com/miniopenclaw/tool/plugins"
)

// The permissions of a configuration file: when --config names a file
// whose "permissions" names a Cedar policy file (relative to the
// configuration file's directory) and --policy is not given, that file is
// applied as --policy would be, with --as, --roles-in, --audit and
// --approve. Each time the configuration file is reloaded (serve and chat
// follow its changes), the policy file it names is reloaded too. A
// configuration that no longer names one, or a policy file that does not
// parse, leaves the policies in force: permissions are never dropped by
// an edit. A file that starts naming permissions only after the command
// started is reported; they apply from the next start.

// permissionsFromConfig sets --policy from the configuration file's
// "permissions" when --policy is not given. A configuration file that
// cannot be read is an error: it cannot say whether it names
// permissions, and the command's other tools would run decided by none.
func (rf *registryFlags) permissionsFromConfig() error {
	if rf.config.file == "" || rf.policy.file != "" {
		return nil
	}
	c, err := plugins.ReadFile(rf.config.file)
	if err != nil {
		return fmt.Errorf("--config: %w (a configuration that cannot be read cannot say which permissions it names: nothing runs without them)", err)
	}
	if c.Permissions != "" {
		rf.policy.file = c.Permissions // resolved by plugins.ReadFile
	}
	rf.policy.follow = plugins.FollowPermissions(rf.policy.file)
	rf.config.reloaded = rf.permissionsReloaded
	return nil
}

// permissionsReloaded follows a reload of the configuration file: it
// reloads the permissions it names when plugins.Permissions says so,
// reporting on the command's stderr.
func (rf *registryFlags) permissionsReloaded(h *plugins.Host, err error) {
	w := rf.config.stderr
	if err != nil || w == nil {
		return // the host reports a configuration that was refused
	}
	pf := rf.policy
	switch change, file := pf.follow.Next(h.Config()); change {
	case plugins.PermissionsNamed:
		fmt.Fprintf(w, "clawtool: %s now names permissions %s: they apply from the next start\n", rf.config.file, file)
	case plugins.PermissionsDropped:
		fmt.Fprintf(w, "clawtool: %s no longer names permissions; those of %s stay in force until the next start\n", rf.config.file, file)
	case plugins.PermissionsChanged:
		if pf.loaded == nil {
			return
		}
		pf.reloadMu.Lock()
		pf.file = file
		pf.reloadMu.Unlock()
		pf.reload(w)
	}
}
