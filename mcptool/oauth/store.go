package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miniopenclaw/tool/internal/atomicfile"
	"github.com/miniopenclaw/tool/internal/statedir"
)

// A Secret is a credential: an access or refresh token, or a client
// secret. Printed with the fmt package or logged with log/slog it shows
// as the marker "redacted" in square brackets; string(s) is the value. Encoded as JSON it is the value,
// for stores.
type Secret string

// String returns the redaction marker.
func (Secret) String() string { return redacted }

// GoString returns the redaction marker.
func (Secret) GoString() string { return redacted }

// Format writes the redaction marker whatever the verb.
func (Secret) Format(f fmt.State, _ rune) { io.WriteString(f, redacted) }

// LogValue returns the redaction marker.
func (Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

const redacted = "[redacted]"

// A Key names the tokens of one principal at one MCP server.
type Key struct {
	// Server is the MCP server's endpoint URL, as configured.
	Server string
	// Principal is whose tokens they are, for hosts that log in more
	// than one account to a server; empty is the default account.
	Principal string
}

// A Record is what a [Store] keeps for a [Key]: the client registration
// at the authorization server that issued the tokens, and the tokens.
// Its secrets are [Secret] values, so printing or logging a Record does
// not show them.
type Record struct {
	Server    string `json:"server"`
	Principal string `json:"principal,omitempty"`
	// Resource is the resource indicator (RFC 8707) the tokens were
	// issued for: the protected resource metadata's "resource".
	Resource string `json:"resource"`
	// Issuer is the authorization server that issued them.
	Issuer             string `json:"issuer"`
	TokenEndpoint      string `json:"token_endpoint"`
	RevocationEndpoint string `json:"revocation_endpoint,omitempty"`
	// Registration is how the client got its ID: "preregistered",
	// "metadata-document" or "dynamic".
	Registration string `json:"registration"`
	ClientID     string `json:"client_id"`
	ClientSecret Secret `json:"client_secret,omitempty"`
	// AuthMethod is the token endpoint's client authentication:
	// "client_secret_basic", "client_secret_post" or "none".
	AuthMethod string `json:"token_endpoint_auth_method"`
	// RedirectURI is the redirect URI the client was registered with.
	RedirectURI string `json:"redirect_uri,omitempty"`

	AccessToken  Secret    `json:"access_token,omitempty"`
	RefreshToken Secret    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// Obtained is when the access token was issued to the client.
	Obtained time.Time `json:"obtained,omitzero"`
	// Scopes are the scopes the access token was granted (or, when the
	// authorization server did not say, requested).
	Scopes []string `json:"scopes,omitempty"`
}

// LogValue logs the record without its secrets.
func (r Record) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("server", r.Server), slog.String("principal", r.Principal), slog.String("resource", r.Resource),
		slog.String("issuer", r.Issuer), slog.String("client_id", r.ClientID), slog.String("registration", r.Registration),
		slog.Bool("access_token", r.AccessToken != ""), slog.Bool("refresh_token", r.RefreshToken != ""),
		slog.Time("expiry", r.Expiry), slog.Any("scopes", r.Scopes),
	)
}

// A Store keeps [Record] values by [Key]. Implementations must be safe
// for concurrent use and must keep the secrets from other users.
type Store interface {
	// Load returns the record of key, or nil and no error when there
	// is none.
	Load(ctx context.Context, key Key) (*Record, error)
	// Save replaces the record of key with rec, whole: a crash leaves
	// the old record or the new one.
	Save(ctx context.Context, key Key, rec *Record) error
	// Delete removes the record of key; it reports whether there was one.
	Delete(ctx context.Context, key Key) (bool, error)
}

// A Locker is a [Store] that can hold one key's record for one holder at
// a time, across processes. The [Handler] holds the lock around each
// refresh and the save of its result, and reads the record again once it
// has the lock, so processes that share the store send one refresh
// request between them: with refresh-token rotation a second request
// would use a spent refresh token and end in a login.
type Locker interface {
	// Lock waits until it holds key's lock, or ctx is done; unlock
	// releases it.
	Lock(ctx context.Context, key Key) (unlock func(), err error)
}

// maxRecordBytes bounds a stored record read back.
const maxRecordBytes = 64 << 10

// A FileStore keeps each record in a file of its own in Dir, named by a
// hash of the key: the directory is made with mode 0700, files are
// written with mode 0600 to a temporary file in the same directory and
// renamed over the old one (and synced), so a reader sees a whole record
// or none. On Unix, a directory or file that other users may read or
// write, or that another user owns, is refused, with an error that says
// how to fix it, rather than used; so is a file that is a symbolic link.
// A FileStore is a [Locker]: on Unix the lock is flock(2) on a file
// beside the record (the record's name with .lock), so it is released
// when the process ends, however it ends.
type FileStore struct {
	Dir string
}

// DefaultDir returns the directory a [FileStore] uses by default: on
// Linux and the BSDs clawtool/oauth under $XDG_STATE_HOME, or
// ~/.local/state when that is not set (tokens are state of this machine,
// to be kept out of the configuration directory that people copy, sync
// and publish); on macOS and Windows clawtool/oauth under
// [os.UserConfigDir].
func DefaultDir() (string, error) {
	d, err := statedir.Dir("oauth")
	if err != nil {
		return "", fmt.Errorf("oauth: %w", err)
	}
	return d, nil
}

// Path returns the file that holds the record of key.
func (s *FileStore) Path(key Key) string {
	sum := sha256.Sum256([]byte(key.Server + "\x00" + key.Principal))
	return filepath.Join(s.Dir, hex.EncodeToString(sum[:16])+".json")
}

// Load implements [Store]. A record whose file names another key (a
// hash collision, or a file copied over another) is refused.
func (s *FileStore) Load(_ context.Context, key Key) (*Record, error) {
	if err := s.checkDir(false); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	name := s.Path(key)
	f, err := openPrivate(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
	if err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	if len(data) > maxRecordBytes {
		return nil, fmt.Errorf("oauth: %s is longer than %d bytes", name, maxRecordBytes)
	}
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("oauth: %s is not a token record: %v (remove it, or log out)", name, err)
	}
	if rec.Server != key.Server || rec.Principal != key.Principal {
		return nil, fmt.Errorf("oauth: %s holds the tokens of another server or principal", name)
	}
	return &rec, nil
}

// Save implements [Store].
func (s *FileStore) Save(_ context.Context, key Key, rec *Record) error {
	if err := s.checkDir(true); err != nil {
		return err
	}
	r := *rec
	r.Server, r.Principal = key.Server, key.Principal
	data, err := json.MarshalIndent(&r, "", "  ")
	if err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	if err := atomicfile.WriteSynced(s.Path(key), data); err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	return nil
}

// LockPath returns the file whose flock(2) is the lock of key.
func (s *FileStore) LockPath(key Key) string {
	return strings.TrimSuffix(s.Path(key), ".json") + ".lock"
}

// Lock implements [Locker].
func (s *FileStore) Lock(ctx context.Context, key Key) (func(), error) {
	if err := s.checkDir(true); err != nil {
		return nil, err
	}
	return lockFile(ctx, s.LockPath(key))
}

// Delete implements [Store].
func (s *FileStore) Delete(_ context.Context, key Key) (bool, error) {
	err := os.Remove(s.Path(key))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("oauth: %w", err)
	}
	syncDir(s.Dir)
	return true, nil
}

// checkDir makes sure Dir is a directory only its owner can use, making
// it (mode 0700) when create is set.
func (s *FileStore) checkDir(create bool) error {
	if s.Dir == "" {
		return errors.New("oauth: FileStore has no directory")
	}
	if create {
		if err := os.MkdirAll(s.Dir, 0o700); err != nil {
			return fmt.Errorf("oauth: %w", err)
		}
	}
	fi, err := os.Lstat(s.Dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("oauth: %s is not a directory", s.Dir)
	}
	return checkPrivate(s.Dir, fi, "chmod 700")
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// A MemoryStore keeps records in memory, for one process: a host that
// logs in each time it starts, or tests. The zero value is empty and
// ready.
type MemoryStore struct {
	mu   sync.Mutex
	recs map[Key]Record
}

// Load implements [Store].
func (m *MemoryStore) Load(_ context.Context, k Key) (*Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[k]
	if !ok {
		return nil, nil
	}
	r.Scopes = slices.Clone(r.Scopes)
	return &r, nil
}

// Save implements [Store].
func (m *MemoryStore) Save(_ context.Context, k Key, r *Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.recs == nil {
		m.recs = map[Key]Record{}
	}
	rec := *r
	rec.Server, rec.Principal, rec.Scopes = k.Server, k.Principal, slices.Clone(r.Scopes)
	m.recs[k] = rec
	return nil
}

// Delete implements [Store].
func (m *MemoryStore) Delete(_ context.Context, k Key) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.recs[k]
	delete(m.recs, k)
	return ok, nil
}

// memoryStore keeps records in the Handler itself, for a Handler
// without a Store.
type memoryStore struct{}

func (memoryStore) Load(context.Context, Key) (*Record, error) { return nil, nil }
func (memoryStore) Save(context.Context, Key, *Record) error   { return nil }
func (memoryStore) Delete(context.Context, Key) (bool, error)  { return false, nil }
