package oauth_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/mcptool/oauth"
)

func TestFileStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "oauth")
	s := &oauth.FileStore{Dir: dir}
	k := oauth.Key{Server: "https://mcp.example/mcp", Principal: "work"}
	if rec, err := s.Load(t.Context(), k); rec != nil || err != nil {
		t.Fatalf("Load before any Save = %v, %v", rec, err)
	}
	rec := &oauth.Record{Resource: k.Server, AccessToken: "at-" + secretMark, RefreshToken: "rt-" + secretMark, ClientSecret: "cs-" + secretMark}
	for range 3 {
		if err := s.Save(t.Context(), k, rec); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Load(t.Context(), k)
	if err != nil || got.AccessToken != rec.AccessToken || got.Server != k.Server || got.Principal != "work" {
		t.Fatalf("Load = %v, %v", got, err)
	}
	if other, _ := s.Load(t.Context(), oauth.Key{Server: k.Server}); other != nil {
		t.Error("another principal's record was loaded")
	}
	di, _ := os.Stat(dir)
	fi, _ := os.Stat(s.Path(k))
	if di.Mode().Perm() != 0o700 || fi.Mode().Perm() != 0o600 {
		t.Errorf("modes %v and %v, want 0700 and 0600", di.Mode(), fi.Mode())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the store, want 1 (no temporary files left)", len(entries))
	}
	if removed, err := s.Delete(t.Context(), k); !removed || err != nil {
		t.Fatalf("Delete = %v, %v", removed, err)
	}
	if removed, err := s.Delete(t.Context(), k); removed || err != nil {
		t.Fatalf("second Delete = %v, %v", removed, err)
	}
}

// TestFileStoreRefusesUnsafeFiles: a record file others may read, a
// symbolic link, a store directory others may enter, and a file copied
// over another key's are refused, not used.
func TestFileStoreRefusesUnsafeFiles(t *testing.T) {
	k := oauth.Key{Server: "https://mcp.example/mcp"}
	cases := []struct {
		name string
		harm func(s *oauth.FileStore)
		want string
	}{
		{"file readable by others", func(s *oauth.FileStore) { os.Chmod(s.Path(k), 0o644) }, "other users"},
		{"directory open to others", func(s *oauth.FileStore) { os.Chmod(s.Dir, 0o755) }, "other users"},
		{"symbolic link", func(s *oauth.FileStore) {
			target := filepath.Join(s.Dir, "elsewhere")
			os.Rename(s.Path(k), target)
			os.Symlink(target, s.Path(k))
		}, "symbolic link"},
		{"another key's record", func(s *oauth.FileStore) {
			other := oauth.Key{Server: "https://evil.example/mcp"}
			s.Save(t.Context(), other, &oauth.Record{AccessToken: "x"})
			os.Rename(s.Path(other), s.Path(k))
		}, "another server"},
		{"garbage", func(s *oauth.FileStore) { os.WriteFile(s.Path(k), []byte("{"), 0o600) }, "not a token record"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &oauth.FileStore{Dir: filepath.Join(t.TempDir(), "oauth")}
			if err := s.Save(t.Context(), k, &oauth.Record{AccessToken: "at-" + secretMark}); err != nil {
				t.Fatal(err)
			}
			c.harm(s)
			rec, err := s.Load(t.Context(), k)
			if rec != nil || err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), secretMark) {
				t.Fatalf("Load = %v, %v; want an error with %q", rec, err, c.want)
			}
		})
	}
}

func TestSecretRedacted(t *testing.T) {
	s := oauth.Secret("at-" + secretMark)
	rec := oauth.Record{AccessToken: s, RefreshToken: s, ClientSecret: s}
	var log strings.Builder
	slog.New(slog.NewJSONHandler(&log, nil)).Info("x", "token", s, "record", rec)
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%s %q %v %+v %#v %x", s, s, rec, rec, rec, s), log.String()} {
		if strings.Contains(out, secretMark) {
			t.Errorf("a secret shows: %s", out)
		}
	}
	if string(s) != "at-"+secretMark {
		t.Error("string(s) lost the value")
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/state")
	if d, err := oauth.DefaultDir(); err != nil || d != "/state/clawtool/oauth" {
		t.Errorf("DefaultDir() = %q, %v", d, err)
	}
	t.Setenv("XDG_STATE_HOME", "relative")
	t.Setenv("HOME", "/home/u")
	if d, _ := oauth.DefaultDir(); d != "/home/u/.local/state/clawtool/oauth" {
		t.Errorf("DefaultDir() = %q with a relative XDG_STATE_HOME", d)
	}
}
