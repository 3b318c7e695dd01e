package sandbox

import "testing"

// RunCatalogIn runs, against b, every catalog row that applies to a
// container backend, with the rows' container overrides; b mounts the
// workspace at workspace and each result must report mode. It is the hook
// of the external test catalog_backends_linux_test.go: the backends of
// sandbox/container import this package, so only package sandbox_test can
// hold them beside this package's test fixture.
func RunCatalogIn(t *testing.T, b Backend, workspace string, mode Mode) {
	f := newFixture(t)
	tg := target{name: string(mode), b: b, container: true, workspace: workspace, mode: mode}
	for _, row := range catalog() {
		if row.container == nil {
			continue
		}
		t.Run(row.id+" "+row.name, func(t *testing.T) { f.attack(t, row, tg) })
	}
}
