package weather

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/miniopenclaw/tool/internal/gen"
)

// TestGeneratedFileIsFresh regenerates clawtool_tools.gen.go into a
// temporary directory and compares it with the checked-in file, so the
// checked-in file cannot rot. Run "go generate ./examples/weather" to
// update it.
func TestGeneratedFileIsFresh(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is needed to load the package")
	}
	files, err := gen.Generate(context.Background(), &gen.Config{Dir: "."}, ".")
	if err != nil {
		t.Fatalf("gen.Generate: %v", err)
	}
	if len(files) != 1 || files[0].Content == nil {
		t.Fatalf("gen.Generate returned %d files, want one with content", len(files))
	}
	tmp := filepath.Join(t.TempDir(), gen.FileName)
	if err := os.WriteFile(tmp, files[0].Content, 0o666); err != nil {
		t.Fatal(err)
	}
	regenerated, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	checkedIn, err := os.ReadFile(gen.FileName)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(checkedIn, regenerated) {
		t.Errorf("%s is out of date: run go generate ./examples/weather (regenerated copy: %s)\n--- checked in\n%s\n--- regenerated\n%s",
			gen.FileName, tmp, checkedIn, regenerated)
	}
}
