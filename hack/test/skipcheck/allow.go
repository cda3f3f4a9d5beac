package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// A skipKey names one test: the Go package's import path (or the Python
// test module, as pytest's junit report names it) and the test's name
// (subtests with their parents: TestA/sub).
type skipKey struct{ Suite, Test string }

func (k skipKey) String() string { return k.Suite + " " + k.Test }

// allowlist maps each allowed skip to why it is allowed.
type allowlist map[skipKey]string

// parseAllowlist reads the allowlist: one skip a line, "SUITE TEST WHY...";
// blank lines and lines starting with # are comments. A line without a
// reason is an error: the list is there to say why.
func parseAllowlist(r io.Reader) (allowlist, error) {
	al := allowlist{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			return nil, fmt.Errorf("line %d: want \"SUITE TEST WHY\" (the reason is required): %q", n, line)
		}
		k := skipKey{f[0], f[1]}
		if _, dup := al[k]; dup {
			return nil, fmt.Errorf("line %d: %s is listed twice", n, k)
		}
		al[k] = strings.Join(f[2:], " ")
	}
	return al, sc.Err()
}

// skip is one test that skipped, with what it said.
type skip struct {
	Key    skipKey
	Reason string
}

// unexpected returns the skips the allowlist does not name.
func unexpected(skips []skip, al allowlist) []skip {
	var out []skip
	for _, s := range skips {
		if _, ok := al[s.Key]; !ok {
			out = append(out, s)
		}
	}
	return out
}

// report writes the verdict on skips to w and says whether they pass.
func report(w io.Writer, what string, skips []skip, al allowlist, allowPath string) bool {
	bad := unexpected(skips, al)
	if len(skips) > 0 {
		fmt.Fprintf(w, "%s: %d skipped, %d of them allowed by %s\n", what, len(skips), len(skips)-len(bad), allowPath)
	}
	if len(bad) == 0 {
		return true
	}
	fmt.Fprintf(w, "FAIL: %d %s skip(s) not in %s (fix the environment, or list the skip there with why):\n", len(bad), what, allowPath)
	for _, s := range bad {
		fmt.Fprintf(w, "--- SKIP not allowed: %s: %s\n", s.Key, oneLine(s.Reason))
	}
	return false
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	if s == "" {
		return "(no reason given)"
	}
	return s
}
