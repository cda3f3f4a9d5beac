package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// `sandpod controller -h` is printed from the flag set, so it lists every
// flag; docs/install.md's table of controller flags must list them too.
func TestControllerFlagsAreDocumented(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	runErr := runController(context.Background(), []string{"-h"})
	os.Stderr = stderr
	w.Close()
	help, _ := io.ReadAll(r)
	if runErr != nil {
		t.Fatalf("controller -h: %v", runErr)
	}
	flags := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(string(help), -1)
	if len(flags) < 15 {
		t.Fatalf("controller -h lists %d flags:\n%s", len(flags), help)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range flags {
		if !strings.Contains(string(doc), "`--"+f[1]+"`") {
			t.Errorf("--%s is not in docs/install.md's table of controller flags", f[1])
		}
	}
}
