package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWorkspaceLinkToSystemDir: a workspace that is a link to a system
// directory is judged as the supervisor will open it.
func TestWorkspaceLinkToSystemDir(t *testing.T) {
	link := filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink("/etc", link); err != nil {
		t.Fatal(err)
	}
	if err := (Policy{Workspace: link}).Validate(); err == nil || !strings.Contains(err.Error(), "is /etc") {
		t.Errorf("Validate() = %v, want the link to /etc refused", err)
	}
	// Control: a link to a directory of the project's own.
	own := filepath.Join(t.TempDir(), "own")
	if err := os.Symlink(t.TempDir(), own); err != nil {
		t.Fatal(err)
	}
	if err := (Policy{Workspace: own}).Validate(); err != nil {
		t.Errorf("Validate() of a link to a temp directory = %v", err)
	}
}

func TestPolicyValidate(t *testing.T) {
	tests := []struct {
		name    string
		p       Policy
		wantErr string
	}{
		{"zero policy", Policy{}, ""},
		{"relative workspace", Policy{Workspace: "ws"}, "not an absolute path"},
		{"relative read-only", Policy{ReadOnly: []string{"usr"}}, "not absolute"},
		{"read-only in the workspace", Policy{Workspace: "/w", ReadOnly: []string{"/w/tools"}}, "lies in the workspace"},
		{"read-only the workspace itself", Policy{Workspace: "/w", ReadOnly: []string{"/w/"}}, ""},
		{"read-only the workspace through a climb", Policy{Workspace: "/w", ReadOnly: []string{"/w/a/.."}}, "lies in the workspace"},
		{"read-only beside the workspace", Policy{Workspace: "/w", ReadOnly: []string{"/wx/tools"}}, ""},
		{"protected escapes", Policy{Workspace: "/w", Protected: []string{"../x"}}, "not inside the workspace"},
		{"protected absolute", Policy{Workspace: "/w", Protected: []string{"/etc"}}, "not inside the workspace"},
		{"protected empty", Policy{Workspace: "/w", Protected: []string{".bashrc", ""}}, "is empty"},
		{"protected escapes once cleaned", Policy{Workspace: "/w", Protected: []string{"a/../../x"}}, "not inside the workspace"},
		{"unknown network", Policy{Network: "bridge"}, "unknown network"},
		{"unknown layer", Policy{Without: []Layer{"magic"}}, "unknown layer"},
		{"api key refused", Policy{Env: []string{"OPENAI_API_KEY=x"}}, "OPENAI_API_KEY is refused"},
		{"lower-case secret refused", Policy{Env: []string{"db_password=x"}}, "refused"},
		{"token refused", Policy{Env: []string{"GITHUB_TOKEN=x"}}, "refused"},
		{"secret refused", Policy{Env: []string{"MY_SECRET=x"}}, "refused"},
		{"named secret passed", Policy{Env: []string{"GITHUB_TOKEN=x", "PATH=/bin"}, Secrets: []string{"GITHUB_TOKEN"}}, ""},
		{"an unnamed secret beside a named one", Policy{Env: []string{"GITHUB_TOKEN=x", "AWS_SECRET_ACCESS_KEY=y"}, Secrets: []string{"GITHUB_TOKEN"}}, "AWS_SECRET_ACCESS_KEY is refused"},
		{"a secret named in another case", Policy{Env: []string{"github_token=x"}, Secrets: []string{"GITHUB_TOKEN"}}, "github_token is refused"},
		{"a named secret not set", Policy{Env: []string{"PATH=/bin"}, Secrets: []string{"GITHUB_TOKEN"}}, `names "GITHUB_TOKEN", which the environment does not set`},
		{"a named secret not set by the default env", Policy{Secrets: []string{"GITHUB_TOKEN"}}, "does not set"},
		{"a prefix of a set name", Policy{Env: []string{"GITHUB_TOKEN_2=x"}, Secrets: []string{"GITHUB_TOKEN", "GITHUB_TOKEN_2"}}, `names "GITHUB_TOKEN", which`},
		// Secrets under names without KEY, SECRET, TOKEN or PASSWORD
		// (each passes once named in Secrets, below).
		{"a password as PASSWD", Policy{Env: []string{"LDAP_PASSWD=x"}}, "LDAP_PASSWD is refused"},
		{"a password as _PWD", Policy{Env: []string{"MYSQL_PWD=x"}}, "MYSQL_PWD is refused"},
		{"a password as _PASS", Policy{Env: []string{"SMTP_PASS=x"}}, "SMTP_PASS is refused"},
		{"a passphrase", Policy{Env: []string{"GPG_PASSPHRASE=x"}}, "GPG_PASSPHRASE is refused"},
		{"credentials", Policy{Env: []string{"REGISTRY_CREDENTIALS=x"}}, "REGISTRY_CREDENTIALS is refused"},
		{"creds", Policy{Env: []string{"CI_CREDS=x"}}, "CI_CREDS is refused"},
		{"an auth value", Policy{Env: []string{"NPM_CONFIG__AUTH=x"}}, "NPM_CONFIG__AUTH is refused"},
		{"a personal access token", Policy{Env: []string{"GH_PAT=x"}}, "GH_PAT is refused"},
		{"a cookie", Policy{Env: []string{"SESSION_COOKIE=x"}}, "SESSION_COOKIE is refused"},
		{"a password in a URL", Policy{Env: []string{"DATABASE_URL=postgres://app:hunter2@db.internal/app"}}, "DATABASE_URL is refused: its value holds credentials in a URL"},
		{"a proxy with a password", Policy{Env: []string{"HTTPS_PROXY=http://me:pw@proxy.example:3128"}}, "HTTPS_PROXY is refused"},
		{"a token as a URL's user", Policy{Env: []string{"REPO=https://ghp_abc123@git.example/x.git"}}, "REPO is refused"},
		{"a second URL with a password", Policy{Env: []string{"MIRRORS=https://a.example/,https://u:p@b.example/"}}, "MIRRORS is refused"},
		{"a URL password named", Policy{Env: []string{"DATABASE_URL=postgres://app:hunter2@db/app"}, Secrets: []string{"DATABASE_URL"}}, ""},
		{"a PWD-named secret named", Policy{Env: []string{"MYSQL_PWD=x"}, Secrets: []string{"MYSQL_PWD"}}, ""},
		// Tokens of well-known formats under innocent names.
		{"a GitHub token as a value", Policy{Env: []string{"CONFIG=ghp_0123456789abcdefghijABCDEFGHIJ012345"}}, "CONFIG is refused: its value holds a GitHub token"},
		{"a fine-grained GitHub token", Policy{Env: []string{"X=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"}}, "a GitHub token"},
		{"a GitLab token", Policy{Env: []string{"X=glpat-abcdefghij0123456789"}}, "a GitLab token"},
		{"a Slack token", Policy{Env: []string{"HOOK=xoxb-1234-5678-abcdefghijkl"}}, "a Slack token"},
		{"an AWS access key id", Policy{Env: []string{"ID=AKIAABCDEFGHIJKLMNOP"}}, "an AWS access key"},
		{"an API key in sk- form", Policy{Env: []string{"LLM=sk-proj-abcdefghijklmnopqrstuvwxyz0123"}}, "an API key"},
		{"a private key", Policy{Env: []string{"DEPLOY=-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n"}}, "a private key"},
		{"a bearer header", Policy{Env: []string{"CURL_HEADER=Authorization: Bearer abcdefghijklmnop0123"}}, "a bearer token"},
		{"a token value named", Policy{Env: []string{"CONFIG=ghp_0123456789abcdefghijABCDEFGHIJ012345"}, Secrets: []string{"CONFIG"}}, ""},
		// Controls: names and values that only look close.
		{"not secrets", Policy{Env: []string{"PWD=/w", "OLDPWD=/", "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b.example", "COMPASS_DIR=/c", "PATH_INFO=/x", "PASSAGE=1", "XDG_SESSION_ID=3",
			"URL=https://a.example/p?who=a@b", "MAIL=user@example.org", "REMOTE=git@git.example:x.git", "HTTP_PROXY=http://proxy.example:3128",
			"TASK=ask-for-help", "DESK=desk-top", "MODE=sk-", "GREETING=ghp", "NOTE=BEGIN PRIVATE", "BRANCH=feature/xoxb", "TITLE=Bearer of news"}}, ""},
		{"malformed env", Policy{Env: []string{"NOEQUALS"}}, "not NAME=value"},
		{"allowed env", Policy{Env: []string{"PATH=/bin", "LANG=C"}}, ""},
		// The run writes its workspace as the owner: a system directory
		// as workspace would hand root's files to the command.
		{"workspace is the root", Policy{Workspace: "/"}, "the root directory"},
		{"workspace is /etc", Policy{Workspace: "/etc"}, "is /etc"},
		{"workspace inside /usr", Policy{Workspace: "/usr/local/src"}, "inside /usr"},
		{"workspace written around /etc", Policy{Workspace: "/tmp/../etc/"}, "is /etc"},
		{"workspace is root's home", Policy{Workspace: "/root"}, "is /root"},
		{"a project in root's home", Policy{Workspace: "/root/project"}, ""},
		{"a project under /tmp", Policy{Workspace: "/tmp/ws"}, ""},
		{"allow list", Policy{Network: NetworkAllow, Allow: []HostRule{{Host: "api.example.com"}, {Host: "*.example.org", Ports: []int{8443}}, {Host: "2001:db8::1"}}}, ""},
		{"allow needs a list", Policy{Network: NetworkAllow}, "empty allow list"},
		{"list needs allow", Policy{Allow: []HostRule{{Host: "a.example"}}}, "needs network"},
		{"list with host network", Policy{Network: NetworkHost, Allow: []HostRule{{Host: "a.example"}}}, "needs network"},
		{"rule without host", Policy{Network: NetworkAllow, Allow: []HostRule{{Ports: []int{80}}}}, "no host"},
		{"bad port", Policy{Network: NetworkAllow, Allow: []HostRule{{Host: "a.example", Ports: []int{0}}}}, "out of range"},
		{"inner wildcard", Policy{Network: NetworkAllow, Allow: []HostRule{{Host: "a.*.example"}}}, "wildcard"},
		{"bare wildcard", Policy{Network: NetworkAllow, Allow: []HostRule{{Host: "*"}}}, "wildcard"},
		{"bracketed v6", Policy{Network: NetworkAllow, Allow: []HostRule{{Host: "[::1]"}}}, "without brackets"},
		{"host with port", Policy{Network: NetworkAllow, Allow: []HostRule{{Host: "a.example:80"}}}, "not a host name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestPolicyLayers(t *testing.T) {
	none := Policy{}.layers()
	if !slices.Contains(none, LayerNetNS) {
		t.Errorf("network none layers %v lack %s", none, LayerNetNS)
	}
	host := Policy{Network: NetworkHost}.layers()
	if slices.Contains(host, LayerNetNS) {
		t.Errorf("network host layers %v include %s", host, LayerNetNS)
	}
	noNS := Policy{Without: []Layer{LayerUserNS}}.layers()
	for _, l := range noNS {
		if namespaceLayer(l) {
			t.Errorf("without a user namespace the layers %v still include %s", noNS, l)
		}
	}
	without := Policy{Without: []Layer{LayerLandlock}}.layers()
	if slices.Contains(without, LayerLandlock) {
		t.Errorf("layers %v still include the layer the policy does without", without)
	}
}

func TestLimitsDefaults(t *testing.T) {
	l := Limits{}.withDefaults()
	if l.Output != 1<<20 || l.CPU != DefaultCPU || l.Memory != DefaultMemory || l.Processes != DefaultProcesses ||
		l.FileSize != DefaultFileSize || l.OpenFiles != DefaultOpenFiles || l.Tmp != DefaultTmp || l.WaitDelay != DefaultWaitDelay ||
		l.WriteBytes != DefaultWrite {
		t.Errorf("Limits{}.withDefaults() = %+v", l)
	}
	if got := (Limits{Output: 10}).withDefaults().Output; got != 10 {
		t.Errorf("explicit Output replaced: %d", got)
	}
}

func TestLayerErrorNamesLayer(t *testing.T) {
	var err error = &LayerError{Layer: LayerLandlock, Reason: "ABI 3 < 6"}
	var le *LayerError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "landlock") {
		t.Errorf("error %q does not name the layer", err)
	}
}

func TestParseHostRule(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    HostRule
		wantErr string
	}{
		{"api.example.com", HostRule{Host: "api.example.com"}, ""},
		{"api.example.com:8443", HostRule{Host: "api.example.com", Ports: []int{8443}}, ""},
		{"*.example.com:80,443", HostRule{Host: "*.example.com", Ports: []int{80, 443}}, ""},
		{"[2001:db8::1]:443", HostRule{Host: "2001:db8::1", Ports: []int{443}}, ""},
		{"2001:db8::1", HostRule{Host: "2001:db8::1"}, ""},
		{"203.0.113.7:22", HostRule{Host: "203.0.113.7", Ports: []int{22}}, ""},
		{"api.example.com:http", HostRule{}, "not a number"},
		{"api.example.com:70000", HostRule{}, "out of range"},
		{"[::1", HostRule{}, "no closing bracket"},
		{"[::1]x", HostRule{}, "want [ADDR]:PORT"},
		{"*", HostRule{}, "wildcard"},
		{"", HostRule{}, "no host"},
	} {
		got, err := ParseHostRule(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseHostRule(%q) = %v, want error with %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got.Host != tc.want.Host || !slices.Equal(got.Ports, tc.want.Ports) {
			t.Errorf("ParseHostRule(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}
