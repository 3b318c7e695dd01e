// Package runstore keeps the agent runs clawtool chat saved when they
// paused on calls waiting for approval, one file per run, in a directory
// of the user's state (see [Default]).
package runstore

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/miniopenclaw/tool/agent"
	"github.com/miniopenclaw/tool/internal/atomicfile"
	"github.com/miniopenclaw/tool/internal/fileowner"
	"github.com/miniopenclaw/tool/internal/statedir"
)

// Defaults of a [Store].
const (
	DefaultMax    = 128
	DefaultMaxAge = 7 * 24 * time.Hour
)

// ErrNotFound is wrapped by the error of [Store.Load] for a run that is
// not saved.
var ErrNotFound = errors.New("no saved run")

// A Store is a directory of saved runs: ID.json, mode 0600, each written
// to a temporary file, synced and renamed, so that a reader sees a whole
// run or none. It keeps at most Max runs: saving a new run when it is
// full first removes runs older than MaxAge, then refuses. A directory
// that other users may write is refused.
type Store struct {
	Dir    string
	Max    int           // 0: DefaultMax
	MaxAge time.Duration // 0: DefaultMaxAge
}

// Default returns the store in the user's state directory:
// clawtool/runs under $XDG_STATE_HOME or ~/.local/state.
func Default() (Store, error) {
	d, err := statedir.Dir("runs")
	if err != nil {
		return Store{}, fmt.Errorf("saved runs: %w", err)
	}
	return Store{Dir: d}, nil
}

// NewID returns a fresh run id: 24 lowercase hexadecimal digits.
func NewID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// checkID refuses what is not a run id, so that no id names a path.
func checkID(id string) error {
	if len(id) != 24 || strings.Trim(id, "0123456789abcdef") != "" {
		return fmt.Errorf("saved runs: %q is not a run id (24 hexadecimal digits)", id)
	}
	return nil
}

func (s Store) file(id string) string { return filepath.Join(s.Dir, id+".json") }

// dir makes the store's directory if create is set, and refuses one
// that others could plant runs in: not a directory, writable by others,
// or another user's (who may write it or change its mode).
func (s Store) dir(create bool) error {
	if s.Dir == "" {
		return errors.New("saved runs: the store has no directory")
	}
	if create {
		if err := os.MkdirAll(s.Dir, 0o700); err != nil {
			return fmt.Errorf("saved runs: %w", err)
		}
	}
	fi, err := os.Lstat(s.Dir)
	if err != nil {
		return fmt.Errorf("saved runs: %w", err)
	}
	if !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("saved runs: %s is not a directory only its owner may write (chmod 700 it)", s.Dir)
	}
	if uid, other := fileowner.Other(fi); other {
		return fmt.Errorf("saved runs: %s belongs to another user (uid %d), who could put runs in it; use a directory of your own", s.Dir, uid)
	}
	return nil
}

// Save writes st as run id, replacing a run saved under id before.
func (s Store) Save(id string, st *agent.RunState) error {
	if err := checkID(id); err != nil {
		return err
	}
	data, err := st.MarshalJSON()
	if err != nil {
		return err
	}
	if err := s.dir(true); err != nil {
		return err
	}
	if _, err := os.Lstat(s.file(id)); errors.Is(err, os.ErrNotExist) {
		if err := s.makeRoom(time.Now()); err != nil {
			return err
		}
	}
	if err := atomicfile.WriteSynced(s.file(id), data); err != nil {
		return fmt.Errorf("saved runs: %w", err)
	}
	return nil
}

// makeRoom removes runs older than MaxAge when the store is full, and
// refuses when it is still full.
func (s Store) makeRoom(now time.Time) error {
	max, age := s.Max, s.MaxAge
	if max <= 0 {
		max = DefaultMax
	}
	if age <= 0 {
		age = DefaultMaxAge
	}
	runs, err := filepath.Glob(filepath.Join(s.Dir, "*.json"))
	if err != nil {
		return fmt.Errorf("saved runs: %w", err)
	}
	if len(runs) < max {
		return nil
	}
	n := len(runs)
	for _, f := range runs {
		if fi, err := os.Lstat(f); err == nil && now.Sub(fi.ModTime()) > age && os.Remove(f) == nil {
			n--
		}
	}
	if n >= max {
		return fmt.Errorf("saved runs: %s holds %d runs, the most it keeps; remove ones no longer wanted", s.Dir, n)
	}
	return nil
}

// Load reads run id, refusing a file that is not a usable saved run
// (see [agent.ParseRunState]) or larger than one may be.
func (s Store) Load(id string) (*agent.RunState, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	if err := s.dir(false); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("saved runs: %w %s in %s", ErrNotFound, id, s.Dir)
		}
		return nil, err
	}
	fi, err := os.Lstat(s.file(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("saved runs: %w %s in %s", ErrNotFound, id, s.Dir)
	}
	if err != nil {
		return nil, fmt.Errorf("saved runs: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("saved runs: %s is not a regular file", s.file(id))
	}
	f, err := os.Open(s.file(id))
	if err != nil {
		return nil, fmt.Errorf("saved runs: %w", err)
	}
	defer f.Close()
	// The file opened, not the name looked at: a run others could have
	// written is not resumed.
	if fi, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("saved runs: %w", err)
	}
	if !fi.Mode().IsRegular() || fileowner.ModesSayWho && fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("saved runs: %s is not a regular file only its owner may write, which other users could have written (remove it)", s.file(id))
	}
	if uid, other := fileowner.Other(fi); other {
		return nil, fmt.Errorf("saved runs: %s belongs to another user (uid %d); it is not resumed (remove it)", s.file(id), uid)
	}
	data, err := io.ReadAll(io.LimitReader(f, agent.MaxRunStateBytes+1))
	if err != nil {
		return nil, fmt.Errorf("saved runs: %w", err)
	}
	st, err := agent.ParseRunState(data)
	if err != nil {
		return nil, fmt.Errorf("saved runs: %s: %w", s.file(id), err)
	}
	return st, nil
}

// Delete removes run id; a run that is not saved is no error.
func (s Store) Delete(id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	if err := os.Remove(s.file(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("saved runs: %w", err)
	}
	return nil
}
