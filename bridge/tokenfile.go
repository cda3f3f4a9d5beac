package bridge

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"
)

// TokenFile authenticates the tokens of a token file (see ParseTokens) and
// picks up changes to it, such as a Kubernetes Secret mounted as a volume
// being updated, within about a second. A file that becomes unreadable or
// invalid keeps the last good tokens.
type TokenFile struct {
	path string

	mu      sync.Mutex
	tokens  StaticTokens
	mod     time.Time
	size    int64
	checked time.Time
}

// NewTokenFile reads path, which must hold at least one token.
func NewTokenFile(path string) (*TokenFile, error) {
	f := &TokenFile{path: path}
	if err := f.load(); err != nil {
		return nil, err
	}
	if len(f.tokens) == 0 {
		return nil, fmt.Errorf("token file %s holds no token", path)
	}
	return f, nil
}

func (f *TokenFile) load() error {
	st, err := os.Stat(f.path)
	if err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	if st.ModTime().Equal(f.mod) && st.Size() == f.size {
		return nil
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	tokens, err := ParseTokens(string(b))
	if err != nil {
		return err
	}
	f.tokens, f.mod, f.size = tokens, st.ModTime(), st.Size()
	return nil
}

// Authenticate checks token against the file's current tokens.
func (f *TokenFile) Authenticate(ctx context.Context, token string) (*Caller, error) {
	f.mu.Lock()
	if now := time.Now(); now.Sub(f.checked) > time.Second {
		f.checked = now
		_ = f.load() // keep the last good tokens
	}
	tokens := f.tokens
	f.mu.Unlock()
	return tokens.Authenticate(ctx, token)
}
