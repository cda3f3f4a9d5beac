package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // build-output, build-fail
}

// goResult is what a `go test -json` stream showed.
type goResult struct {
	Skips  []skip
	Failed bool // a test, a package or a build failed
	Events int
}

type testKey struct{ pkg, test string }

// goStream copies the human-readable output of a `go test -json` stream
// from r to w and collects its skips and failures. verbose writes every
// line, as `go test -v` would; otherwise only what plain `go test` shows
// (package results and the output of failed tests), plus each skipped
// test's --- SKIP line with its reason.
func goStream(r io.Reader, w io.Writer, verbose bool) (goResult, error) {
	var res goResult
	buf := map[testKey][]string{}
	// Output of failed subtests waits for their parent, as go test prints it.
	held := map[testKey][]string{}
	// A package's own lines (its ok or FAIL line) wait for its end, so that
	// what its unfinished tests printed (a crash) comes before them.
	pkgOut := map[string][]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// Not an event (go vet's or the toolchain's own output): as is.
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		res.Events++
		k := testKey{e.Package, e.Test}
		switch e.Action {
		case "build-output":
			io.WriteString(w, e.Output)
		case "build-fail":
			res.Failed = true
		case "output":
			if e.Test != "" {
				buf[k] = append(buf[k], e.Output)
			}
			switch {
			case verbose:
				io.WriteString(w, e.Output)
			case e.Test == "" && strings.TrimSpace(e.Output) != "PASS":
				pkgOut[e.Package] = append(pkgOut[e.Package], e.Output)
			}
		case "skip":
			if e.Test == "" { // a package without tests
				writeLines(w, pkgOut[e.Package])
				delete(pkgOut, e.Package)
				break
			}
			res.Skips = append(res.Skips, skip{Key: skipKey{e.Package, e.Test}, Reason: reason(buf[k])})
			if !verbose {
				writeLines(w, asPlain(e.Test, buf[k]))
			}
			delete(buf, k)
		case "pass":
			delete(buf, k)
			delete(held, k)
			if e.Test == "" {
				writeLines(w, pkgOut[e.Package])
				delete(pkgOut, e.Package)
			}
		case "fail":
			res.Failed = true
			if e.Test == "" {
				// A package that failed outside a test's end (a panic, a
				// timeout, a crash): what its unfinished tests printed.
				for _, m := range []map[testKey][]string{buf, held} {
					for tk, lines := range m {
						if tk.pkg != e.Package {
							continue
						}
						if !verbose {
							writeLines(w, asPlain(tk.test, lines))
						}
						delete(m, tk)
					}
				}
				writeLines(w, pkgOut[e.Package])
				delete(pkgOut, e.Package)
				break
			}
			lines := append(asPlain(e.Test, buf[k]), held[k]...)
			delete(buf, k)
			delete(held, k)
			if verbose {
				break
			}
			if i := strings.LastIndex(e.Test, "/"); i >= 0 {
				pk := testKey{e.Package, e.Test[:i]}
				held[pk] = append(held[pk], lines...)
			} else {
				writeLines(w, lines)
			}
		}
	}
	// A stream cut short (go test killed): what is left, as it is.
	for _, lines := range pkgOut {
		writeLines(w, lines)
	}
	return res, sc.Err()
}

// withoutFraming drops test2json's "=== RUN" and like lines, which plain
// `go test` does not print.
func withoutFraming(lines []string) []string {
	var out []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "=== RUN") || strings.HasPrefix(t, "=== PAUSE") ||
			strings.HasPrefix(t, "=== CONT") || strings.HasPrefix(t, "=== NAME") {
			continue
		}
		out = append(out, l)
	}
	return out
}

// asPlain turns a test's lines as test2json saw them (go test -v's order:
// its logs, then its --- FAIL line) into plain go test's: the result line
// first, then the logs, a subtest indented under its parent.
func asPlain(test string, lines []string) []string {
	lines = withoutFraming(lines)
	for i, l := range lines {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "--- FAIL") || strings.HasPrefix(t, "--- SKIP") {
			lines = append([]string{l}, append(lines[:i:i], lines[i+1:]...)...)
			break
		}
	}
	indent := strings.Repeat("    ", strings.Count(test, "/"))
	if indent == "" {
		return lines
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = indent + l
	}
	return out
}

// reason is what a skipped test printed: its t.Skip message, its logs.
func reason(lines []string) string {
	var b strings.Builder
	for _, l := range withoutFraming(lines) {
		if strings.Contains(l, "--- SKIP") {
			continue
		}
		b.WriteString(l)
	}
	return b.String()
}

func writeLines(w io.Writer, lines []string) {
	for _, l := range lines {
		io.WriteString(w, l)
	}
}
