// Package docs_test keeps docs/architecture.md's package map true: every Go
// package under core/, bridge/ and cmd/ has a row in its component table,
// and every path a row names still exists.
//
// What a row names is the backquoted paths of its first column (a row may
// name several, comma-separated):
//
//   - `dir` (or `dir/`): that one package directory;
//   - `dir/...`: that directory and every package below it, Go's own pattern
//     for a subtree (for a package whose subpackages are its parts, e.g. the
//     controller's reconcilers, or generated stubs);
//   - a file or a glob of files (`bridge/tunnel.go`, `bridge/preview*.go`):
//     a part of a package described on its own row; it must match a file,
//     and it covers no package (the package still needs its own row).
//
// A package moved or added without its row fails TestArchitectureMap, naming
// the directory; a row left behind by a move fails it too.
package docs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the repository, seen from this package's directory (go test runs
// a test in its package's directory).
const root = "../.."

// mapped are the directories whose packages the map must name.
var mapped = []string{"core", "bridge", "cmd"}

// entryKind is what a path in the table's first column stands for.
type entryKind int

const (
	pkgEntry     entryKind = iota // one package directory
	subtreeEntry                  // a directory and everything below it
	fileEntry                     // a file or a glob of files: covers no package
)

type entry struct {
	path string
	kind entryKind
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// componentEntries reads the table under "## Components" in md: the paths
// of each row's first column.
func componentEntries(md string) ([]entry, error) {
	lines := strings.Split(md, "\n")
	start := slices.Index(lines, "## Components")
	if start < 0 {
		return nil, errors.New(`no "## Components" heading`)
	}
	var entries []entry
	inTable := false
	for _, line := range lines[start+1:] {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			if strings.HasPrefix(line, "#") {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		first := strings.TrimSpace(cells[1])
		if first == "path" || strings.Trim(first, "-: ") == "" {
			continue // the header and its rule
		}
		spans := codeSpan.FindAllStringSubmatch(first, -1)
		if len(spans) == 0 {
			return nil, fmt.Errorf("a row names no path in backquotes: %q", first)
		}
		for _, s := range spans {
			entries = append(entries, classify(s[1]))
		}
	}
	if len(entries) == 0 {
		return nil, errors.New(`no table under "## Components"`)
	}
	return entries, nil
}

func classify(p string) entry {
	switch {
	case strings.HasSuffix(p, "/..."):
		return entry{path: strings.TrimSuffix(p, "/..."), kind: subtreeEntry}
	case strings.ContainsAny(p, "*?[") || strings.HasSuffix(p, ".go"):
		return entry{path: p, kind: fileEntry}
	default:
		return entry{path: strings.TrimSuffix(p, "/"), kind: pkgEntry}
	}
}

// unmapped are the package directories (slash-separated, relative to the
// repository) that no entry covers.
func unmapped(pkgs []string, entries []entry) []string {
	var out []string
	for _, dir := range pkgs {
		covered := slices.ContainsFunc(entries, func(e entry) bool {
			switch e.kind {
			case pkgEntry:
				return dir == e.path
			case subtreeEntry:
				return dir == e.path || strings.HasPrefix(dir, e.path+"/")
			}
			return false
		})
		if !covered {
			out = append(out, dir)
		}
	}
	return out
}

// stale are the entries that name nothing: a directory that is gone, or a
// file pattern that matches no file. exists answers for a directory (a path)
// or a file pattern (a glob).
func stale(entries []entry, exists func(e entry) bool) []string {
	var out []string
	for _, e := range entries {
		if !exists(e) {
			out = append(out, e.path)
		}
	}
	return out
}

// goPackageDirs lists the directories under each of tops (relative to base)
// that hold .go files, testdata and hidden directories left out, as Go does.
func goPackageDirs(base string, tops []string) ([]string, error) {
	seen := map[string]bool{}
	for _, top := range tops {
		err := filepath.WalkDir(filepath.Join(base, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() {
				if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(name, ".go") {
				rel, err := filepath.Rel(base, filepath.Dir(p))
				if err != nil {
					return err
				}
				seen[filepath.ToSlash(rel)] = true
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	dirs := make([]string, 0, len(seen))
	for d := range seen {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	return dirs, nil
}

func existsIn(base string) func(entry) bool {
	return func(e entry) bool {
		p := filepath.Join(base, filepath.FromSlash(e.path))
		if e.kind == fileEntry {
			m, err := filepath.Glob(p)
			return err == nil && len(m) > 0
		}
		st, err := os.Stat(p)
		return err == nil && st.IsDir()
	}
}

func TestArchitectureMap(t *testing.T) {
	md, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := componentEntries(string(md))
	if err != nil {
		t.Fatalf("docs/architecture.md: %v", err)
	}
	pkgs, err := goPackageDirs(root, mapped)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) == 0 {
		t.Fatalf("no Go package found under %v from %s", mapped, root)
	}
	for _, dir := range unmapped(pkgs, entries) {
		t.Errorf("docs/architecture.md's component table has no row for the package %s: add one whose first column is `%s` (or `<parent>/...` if it is a part of its parent's row)", dir, dir)
	}
	for _, p := range stale(entries, existsIn(root)) {
		t.Errorf("docs/architecture.md's component table names `%s`, which no longer exists: move or drop the row", p)
	}
}

func TestComponentEntries(t *testing.T) {
	cases := map[string]struct {
		md      string
		want    []entry
		wantErr bool
	}{
		"paths of the first column, whatever the row says": {
			md: "# A\n\n## Components\n\n| path | what |\n|---|---|\n" +
				"| `bridge/` | serves `core/engine` |\n" +
				"| `core/controller/...` | reconcilers |\n" +
				"| `bridge/preview*.go`, `bridge/tunnel.go` | previews |\n\nafter\n| `not/this` | x |\n",
			want: []entry{
				{"bridge", pkgEntry},
				{"core/controller", subtreeEntry},
				{"bridge/preview*.go", fileEntry},
				{"bridge/tunnel.go", fileEntry},
			},
		},
		"a table in the next section is not read": {
			md:   "## Components\n\n| path | what |\n|---|---|\n| `a` | x |\n\n## Other\n\n| `b` | y |\n",
			want: []entry{{"a", pkgEntry}},
		},
		"no heading":             {md: "| `a` | x |\n", wantErr: true},
		"no table":               {md: "## Components\n\ntext\n\n## Next\n| `a` | b |\n", wantErr: true},
		"a row without any path": {md: "## Components\n\n| path | what |\n|---|---|\n| the bridge | x |\n", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := componentEntries(tc.md)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tc.wantErr)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestUnmapped(t *testing.T) {
	pkgs := []string{"bridge", "bridge/kube", "core/controller", "core/controller/claim", "core/controllerx", "core/engine"}
	cases := map[string]struct {
		entries []entry
		want    []string
	}{
		"a package row covers only itself": {
			entries: []entry{{"bridge", pkgEntry}, {"core/controller", pkgEntry}, {"core/engine", pkgEntry}},
			want:    []string{"bridge/kube", "core/controller/claim", "core/controllerx"},
		},
		"a subtree covers itself and below, not a sibling sharing its prefix": {
			entries: []entry{{"bridge", subtreeEntry}, {"core/controller", subtreeEntry}, {"core/engine", pkgEntry}},
			want:    []string{"core/controllerx"},
		},
		"a file row covers no package": {
			entries: []entry{{"bridge/*.go", fileEntry}, {"bridge/kube", pkgEntry}},
			want:    []string{"bridge", "core/controller", "core/controller/claim", "core/controllerx", "core/engine"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := unmapped(pkgs, tc.entries); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStaleEntries(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"core/engine/engine.go", "bridge/preview.go"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("package x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]struct {
		entries []entry
		want    []string
	}{
		"everything there": {
			entries: []entry{{"core/engine", pkgEntry}, {"core", subtreeEntry}, {"bridge/preview*.go", fileEntry}},
		},
		"a moved package, a gone subtree, a glob matching nothing": {
			entries: []entry{{"core/agent", pkgEntry}, {"bridge/kube", subtreeEntry}, {"bridge/tunnel*.go", fileEntry}},
			want:    []string{"core/agent", "bridge/kube", "bridge/tunnel*.go"},
		},
		"a file named as a package": {
			entries: []entry{{"bridge/preview.go/x", pkgEntry}, {"core/engine/engine.go", pkgEntry}},
			want:    []string{"bridge/preview.go/x", "core/engine/engine.go"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := stale(tc.entries, existsIn(dir)); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
