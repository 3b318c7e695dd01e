package plugins

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long [Host.Watch] waits after the configuration
// file last changed before it reloads: editors write a file in several
// steps.
const DefaultDebounce = 200 * time.Millisecond

// Watch loads the configuration file (see [Host.Reload]) and then reloads
// it whenever it changes, until ctx is done. It watches the file's
// directory, so a file that an editor replaces (writes a new file and
// renames it over the old) is followed too. Changes are debounced (see
// [WithDebounce]). A reload that fails keeps the last good configuration;
// [WithReloadFunc] and [WithLogger] report it. Watch returns an error only
// when the file cannot be watched; Close the Host after it returns.
func (h *Host) Watch(ctx context.Context, file string) error {
	abs, err := filepath.Abs(file)
	if err != nil {
		return err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("plugins: watch %s: %w", file, err)
	}
	defer w.Close()
	if err := w.Add(filepath.Dir(abs)); err != nil {
		return fmt.Errorf("plugins: watch %s: %w", file, err)
	}
	_ = h.Reload(ctx, abs)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if filepath.Clean(ev.Name) != abs || ev.Op == fsnotify.Chmod {
				continue
			}
			timer.Reset(h.debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			h.logger.Warn("plugins: watching the configuration", "file", abs, "error", err)
		case <-timer.C:
			_ = h.Reload(ctx, abs)
		}
	}
}
