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

// TestDefaultNativeOptions: the environment DefaultNative reads at its
// first use sets its spares and its helper program, and nothing else.
func TestDefaultNativeOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want NativeOptions
	}{
		{"unset", nil, NativeOptions{Spares: DefaultSpares}},
		{"spares off", map[string]string{SpareEnv: "0"}, NativeOptions{}},
		{"spares other value", map[string]string{SpareEnv: "7"}, NativeOptions{Spares: DefaultSpares}},
		{"helper program", map[string]string{HelperEnv: "/opt/clawtool/clawtool-sandbox-helper"}, NativeOptions{Spares: DefaultSpares, Helper: "/opt/clawtool/clawtool-sandbox-helper"}},
		// Kept as given: NewNative's contract fails every run of a
		// relative path rather than resolving it.
		{"relative helper kept", map[string]string{HelperEnv: "clawtool-sandbox-helper", SpareEnv: "0"}, NativeOptions{Helper: "clawtool-sandbox-helper"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := defaultNativeOptions(func(k string) string { return tc.env[k] })
			if got != tc.want {
				t.Errorf("defaultNativeOptions = %+v, want %+v", got, tc.want)
			}
		})
	}
}
