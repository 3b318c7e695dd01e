package sandbox

import (
	"slices"
	"testing"
)

// TestDefaultsAreCopies checks that no caller can weaken the sandbox by
// changing what a default function returns: each row spoils the returned
// slice the way a package in the same process could, then Validate must
// still judge by the package's own value (a policy it must accept and, for
// RequiredLayers, the spoiled layer name it must still refuse).
func TestDefaultsAreCopies(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spoil  func()
		accept Policy
		refuse []Policy
	}{
		{"RequiredLayers", func() {
			l := RequiredLayers()
			for i := range l {
				l[i] = "bogus"
			}
		}, Policy{Without: []Layer{LayerSeccomp}}, []Policy{{Without: []Layer{"bogus"}}}},
		{"DefaultEnv", func() { DefaultEnv()[0] = "API_TOKEN=leaked" }, Policy{}, nil},
		{"DefaultProtected", func() { DefaultProtected()[0] = "../outside" }, Policy{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spoil()
			if err := tc.accept.Validate(); err != nil {
				t.Errorf("Validate(%+v) after spoiling the returned %s: %v", tc.accept, tc.name, err)
			}
			for _, p := range tc.refuse {
				if err := p.Validate(); err == nil {
					t.Errorf("Validate(%+v) after spoiling the returned %s accepted it", p, tc.name)
				}
			}
		})
	}
	// The run-time readers see the package's values, not the spoiled ones.
	if !slices.Contains(Policy{}.layers(), LayerSeccomp) {
		t.Errorf("layers %v lack seccomp after spoiling RequiredLayers", Policy{}.layers())
	}
	if env, _ := (Policy{}).environ(); slices.Contains(env, "API_TOKEN=leaked") {
		t.Errorf("environment %q after spoiling DefaultEnv", env)
	}
}

// TestDefaultAllowPortsIsACopy: a rule that names no port still means
// 443 and 80 after a caller overwrote the returned ports with 22, so a
// listed host's port 80 is reached through the proxy and its port 22 is
// not.
func TestDefaultAllowPortsIsACopy(t *testing.T) {
	ports := DefaultAllowPorts()
	for i := range ports {
		ports[i] = 22
	}
	f := newProxyFixture(t, &Proxy{Rules: []HostRule{{Host: "listed.test"}}})
	if code, body := f.connect(t, "listed.test:80"); code != 200 {
		t.Fatalf("CONNECT listed.test:80 = %d %q after spoiling DefaultAllowPorts, want 200", code, body)
	}
	if code, _ := f.connect(t, "listed.test:22"); code != 403 {
		t.Fatalf("CONNECT listed.test:22 = %d after spoiling DefaultAllowPorts, want 403", code)
	}
}
