package bridge

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestStaticTokensScopeNamespaces(t *testing.T) {
	tokens, err := ParseTokens("# comment\nall\nteam team-a,team-b\n")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, _ := StaticTokens(tokens).Authenticate(ctx, "team")
	if c == nil || c.Allow(ctx, "team-b") != nil || status.Code(c.Allow(ctx, "other")) != codes.PermissionDenied {
		t.Errorf("scoped token: %+v", c)
	}
	if c, _ := StaticTokens(tokens).Authenticate(ctx, "all"); c == nil || c.Allow != nil {
		t.Errorf("unscoped token: %+v", c)
	}
	if c, _ := StaticTokens(tokens).Authenticate(ctx, "al"); c != nil {
		t.Errorf("a prefix of a token was accepted")
	}
	if _, err := ParseTokens("t a b"); err == nil {
		t.Errorf("three fields accepted")
	}
	if _, err := ParseTokens("t Bad_NS"); err == nil {
		t.Errorf("a bad namespace accepted")
	}
}

func TestTokenFilePicksUpChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := NewTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if c, _ := f.Authenticate(ctx, "old"); c == nil {
		t.Fatal("token from the file refused")
	}
	if err := os.WriteFile(path, []byte("new-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.checked = time.Time{} // as if a second had passed
	f.mu.Unlock()
	if c, _ := f.Authenticate(ctx, "new-token"); c == nil {
		t.Error("a token added to the file was not picked up")
	}
	if c, _ := f.Authenticate(ctx, "old"); c != nil {
		t.Error("a token removed from the file still works")
	}
	if err := os.WriteFile(path, []byte("a b c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.checked = time.Time{}
	f.mu.Unlock()
	if c, _ := f.Authenticate(ctx, "new-token"); c == nil {
		t.Error("an invalid file dropped the last good tokens")
	}
	if _, err := NewTokenFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing token file accepted")
	}
}
