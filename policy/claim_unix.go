//go:build unix

package policy

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// processStart returns what tells process pid from a later one given
// the same id: on Linux the boot id and the start time in clock ticks
// since boot (field 22 of /proc/PID/stat); "" where that cannot be read.
func processStart(pid int) string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 { // field 22 is the 20th after the name
		return ""
	}
	return strings.TrimSpace(string(boot)) + "/" + f[19]
}

// processGone reports whether the process of c has ended. Where the
// start time was recorded it must match; where it was not, a live
// process with the same id counts as the claimer (so a reused id never
// makes a live claim look interrupted, only the other way round).
func processGone(c ApprovalClaim) bool {
	if c.PID <= 0 {
		return false
	}
	if c.Start != "" {
		_, err := os.Stat("/proc/" + strconv.Itoa(c.PID) + "/stat")
		if errors.Is(err, os.ErrNotExist) {
			if _, err := os.Stat("/proc/self/stat"); err != nil {
				return false // no /proc: cannot tell
			}
			return true
		}
		now := processStart(c.PID)
		return now != "" && now != c.Start
	}
	err := syscall.Kill(c.PID, 0)
	return errors.Is(err, syscall.ESRCH)
}
