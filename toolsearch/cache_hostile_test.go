//go:build unix

package toolsearch

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// poisonedCache builds an embeddings cache in dir holding get_weather's
// vector only, then overwrites that vector with the query's: whoever
// writes the cache decides where get_weather ranks for that query.
func poisonedCache(t *testing.T, api *embeddingsAPI, dir, query string) string {
	t.Helper()
	ix := NewWithOptions(testRegistry(t, embedTools[3]), Options{Embedder: api.embedder(), CacheDir: dir})
	ix.Search("anything", 1)
	ix.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.f32"))
	if len(files) != 1 {
		t.Fatalf("%d cached vectors, want get_weather's alone", len(files))
	}
	vec := api.vector(query)
	data := make([]byte, 4*len(vec))
	for i, x := range vec {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(x))
	}
	if err := os.WriteFile(files[0], data, 0o600); err != nil {
		t.Fatal(err)
	}
	return files[0]
}

// TestEmbeddingCacheOthersMayWrite: the vectors of tool definitions on
// disk decide which tools a model is shown. A cache directory another
// user may write (a shared XDG_CACHE_HOME, a directory left 0777) let that
// user plant a vector that put their pick first for any query they
// guessed. Such a cache is not read: the definitions are embedded again.
func TestEmbeddingCacheOthersMayWrite(t *testing.T) {
	const query = "obliterate the scratch record"
	meaning := map[string]string{"obliterate": "delete", "scratch": "temporary", "record": "file"}
	search := func(t *testing.T, api *embeddingsAPI, dir string) []string {
		ix := NewWithOptions(testRegistry(t, embedTools...), Options{Embedder: api.embedder(), CacheDir: dir})
		defer ix.Close()
		got := names(ix.Search(query, 5))
		if err := ix.EmbedError(); err != nil {
			t.Fatal(err)
		}
		return got
	}

	// Control: in the user's own cache the planted vector is read, and
	// get_weather comes first for a query about deleting a file.
	api := newEmbeddingsAPI(t, meaning)
	own := t.TempDir()
	poisonedCache(t, api, own, query)
	if got := search(t, api, own); len(got) == 0 || got[0] != "get_weather" {
		t.Fatalf("control: the planted vector was not read: %v", got)
	}

	for _, c := range []struct {
		name  string
		alter func(t *testing.T, dir, file string)
	}{
		{"cache directory writable by others", func(t *testing.T, dir, _ string) { chmod(t, dir, 0o777) }},
		{"subdirectory writable by its group", func(t *testing.T, _, file string) { chmod(t, filepath.Dir(file), 0o770) }},
		{"file writable by others", func(t *testing.T, _, file string) { chmod(t, file, 0o666) }},
		{"file of another user", func(t *testing.T, _, file string) { chown(t, file, 4242) }},
		{"subdirectory of another user", func(t *testing.T, _, file string) { chown(t, filepath.Dir(file), 4242) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			api := newEmbeddingsAPI(t, meaning)
			dir := t.TempDir()
			file := poisonedCache(t, api, dir, query)
			c.alter(t, dir, file)
			before := len(api.embedded())
			if got := search(t, api, dir); len(got) == 0 || got[0] != "delete_file" {
				t.Fatalf("search over a cache others may write: %v, want delete_file first", got)
			}
			if !slices.ContainsFunc(api.embedded()[before:], func(s string) bool { return s != query && containsWord(s, "weather") }) {
				t.Errorf("get_weather was not embedded again: its planted vector was used")
			}
		})
	}
}

// TestEmbeddingCacheHostileFiles: a cached vector that is a FIFO or a link
// to a device is neither waited on nor read: the search embeds the tool
// again. Before the check, the FIFO held the search until a writer came
// and the link to /dev/zero was read until the kernel killed the process
// for its memory (24 GB here).
func TestEmbeddingCacheHostileFiles(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant func(t *testing.T, file string)
	}{
		{"fifo", func(t *testing.T, file string) {
			if err := syscall.Mkfifo(file, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"link to /dev/zero", func(t *testing.T, file string) {
			if err := os.Symlink("/dev/zero", file); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			api := newEmbeddingsAPI(t, nil)
			dir := t.TempDir()
			file := poisonedCache(t, api, dir, "x")
			if err := os.Remove(file); err != nil {
				t.Fatal(err)
			}
			c.plant(t, file)
			if c.name == "fifo" {
				// Control: opening the FIFO for reading as os.ReadFile
				// does waits for a writer (released here by one).
				opened := make(chan struct{})
				go func() {
					f, err := os.Open(file)
					if err == nil {
						f.Close()
					}
					close(opened)
				}()
				select {
				case <-opened:
					t.Fatal("control: opening the FIFO did not wait for a writer")
				case <-time.After(50 * time.Millisecond):
				}
				w, err := os.OpenFile(file, os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				<-opened
				w.Close()
			}
			done := make(chan []string, 1)
			go func() {
				ix := NewWithOptions(testRegistry(t, embedTools...), Options{Embedder: api.embedder(), CacheDir: dir})
				defer ix.Close()
				done <- names(ix.Search("weather", 5))
			}()
			select {
			case got := <-done:
				if len(got) == 0 || got[0] != "get_weather" {
					t.Errorf("search: %v, want get_weather first", got)
				}
			case <-time.After(2 * time.Minute):
				// Release a search stuck on the FIFO so the test ends.
				if w, err := os.OpenFile(file, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close()
				}
				t.Fatal("search still waiting on the cached vector after 2 minutes")
			}
		})
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func chown(t *testing.T, path string, uid int) {
	t.Helper()
	if err := os.Chown(path, uid, -1); err != nil {
		t.Fatal(err)
	}
}

func containsWord(s, w string) bool { return slices.Contains(splitWords(s), w) }

// TestWordVectorsCacheOthersMayWrite: a converted word-vector table in a
// cache directory others may write is not read (TestLoadWordVectorsCache
// is the control: in a private one, a planted table answers), nor is a
// stamp naming one; and a FIFO given as the table is refused, not waited
// on.
func TestWordVectorsCacheOthersMayWrite(t *testing.T) {
	src, _ := copySmallVectors(t, t.TempDir())
	for _, c := range []struct {
		name  string
		alter func(t *testing.T, cache, compact string)
	}{
		{"cache directory writable by others", func(t *testing.T, cache, _ string) { chmod(t, cache, 0o777) }},
		{"table writable by its group", func(t *testing.T, _, compact string) { chmod(t, compact, 0o620) }},
		{"table of another user", func(t *testing.T, _, compact string) { chown(t, compact, 4242) }},
		{"stamps of another user", func(t *testing.T, cache, _ string) { chown(t, filepath.Join(cache, "stamps"), 4242) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			cache := filepath.Join(t.TempDir(), "cache")
			first, err := LoadWordVectors(src, cache)
			if err != nil {
				t.Fatal(err)
			}
			compact := filepath.Join(cache, first.Digest()+".wv")
			other := smallVectors(t)
			other.digest = first.Digest()
			other.scale[0] *= 2
			if err := os.WriteFile(compact, other.encode(), 0o600); err != nil {
				t.Fatal(err)
			}
			c.alter(t, cache, compact)
			second, err := LoadWordVectors(src, cache)
			if err != nil {
				t.Fatal(err)
			}
			if second.scale[0] != first.scale[0] {
				t.Fatal("the planted table answered")
			}
		})
	}
	t.Run("fifo", func(t *testing.T) {
		fifo := filepath.Join(t.TempDir(), "v.json")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := LoadWordVectors(fifo, "")
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("LoadWordVectors(fifo) = %v, want not a regular file", err)
			}
		case <-time.After(2 * time.Minute):
			if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
			t.Fatal("LoadWordVectors still waiting on a FIFO after 2 minutes")
		}
	})
}
