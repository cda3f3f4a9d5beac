package main

import (
	"os"
	"path/filepath"
	"testing"
)

// install-agent copies the small agent when the image has it beside the
// sandpod binary, and the binary itself otherwise (an older image).
func TestAgentSource(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "sandpod")
	if err := os.WriteFile(self, []byte("full"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := agentSource(self); got != self {
		t.Errorf("without sandpod-agent: %s, want %s", got, self)
	}
	small := filepath.Join(dir, "sandpod-agent")
	if err := os.WriteFile(small, []byte("small"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := agentSource(self); got != small {
		t.Errorf("with sandpod-agent: %s, want %s", got, small)
	}
}
