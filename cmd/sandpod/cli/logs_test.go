package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestPrintLogFollows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.log")
	if err := os.WriteFile(path, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := newLineWriter()
	a := &app{out: out}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.printLog(ctx, path, true) }()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("second\n"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for out.String() != "first\nsecond\n" {
		if time.Now().After(deadline) {
			t.Fatalf("followed: %q", out.String())
		}
		<-out.wrote
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("follow ended with %v", err)
	}
	if err := a.printLog(context.Background(), path+".missing", false); exitCodeOf(err) != ExitNoInput {
		t.Fatalf("a missing log: %v", err)
	}
}
