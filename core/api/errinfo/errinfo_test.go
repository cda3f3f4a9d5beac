package errinfo

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The packages whose statuses reach a caller: the bridge and its backends,
// the local engine, the agent, and the binary that wires them.
var serverDirs = []string{"bridge", "core", "cmd"}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found from %s: %v", root, err)
	}
	return root
}

// Every status the server makes carries a specific reason: server code
// never calls status.Error, Errorf, New or Newf (which make statuses with
// none), and every call of this package's constructors names a reason
// constant, not a literal or a conversion that could smuggle in an
// undeclared one.
func TestServerStatusesCarryReasons(t *testing.T) {
	root := repoRoot(t)
	constructors := map[string]int{"New": 1, "Newf": 1, "Invalid": 0} // index of the reason argument
	var problems []string
	checked := 0
	for _, dir := range serverDirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			rel, _ := filepath.Rel(root, path)
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			// Unimported names count too: the file may not compile yet.
			statusName, errinfoName := "status", "errinfo"
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				name := filepath.Base(p)
				if imp.Name != nil {
					name = imp.Name.Name
				}
				switch p {
				case "google.golang.org/grpc/status":
					statusName = name
				case "github.com/sandpod/sandpod/core/api/errinfo":
					errinfoName = name
				}
			}
			inErrinfo := filepath.ToSlash(filepath.Dir(rel)) == "core/api/errinfo"
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				var pkg, fn string
				switch fun := call.Fun.(type) {
				case *ast.SelectorExpr:
					if x, ok := fun.X.(*ast.Ident); ok {
						pkg, fn = x.Name, fun.Sel.Name
					}
				case *ast.Ident:
					if inErrinfo {
						pkg, fn = errinfoName, fun.Name
					}
				}
				pos := fset.Position(call.Pos())
				where := rel + ":" + strconv.Itoa(pos.Line)
				if pkg != "" && pkg == statusName && !inErrinfo {
					switch fn {
					case "Error", "Errorf", "New", "Newf":
						problems = append(problems, where+": status."+fn+" makes a status without a reason; use errinfo.New, Newf or Invalid")
					}
				}
				idx, isCtor := constructors[fn]
				if (pkg != "" && pkg == errinfoName || inErrinfo && pkg == "") && isCtor && len(call.Args) > idx {
					checked++
					switch a := call.Args[idx].(type) {
					case *ast.BasicLit:
						problems = append(problems, where+": reason "+a.Value+" is a literal; declare it in core/api/errinfo/reasons.go")
					case *ast.CallExpr:
						problems = append(problems, where+": reason is computed; name a declared reason")
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range problems {
		t.Error(p)
	}
	// The scan must have seen the constructors (a broken walk passes nothing).
	if checked < 50 {
		t.Errorf("saw only %d errinfo constructor calls; is the scan looking at the right files?", checked)
	}
}

var upperSnake = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$`)

// declaredReasons parses reasons.go: every constant of type Why.
func declaredReasons(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "reasons.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Why" {
				t.Errorf("%s: every reason constant has type Why", vs.Names[0].Name)
				continue
			}
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					t.Fatalf("%s: not a string literal", name.Name)
				}
				v, _ := strconv.Unquote(lit.Value)
				out[name.Name] = v
			}
		}
	}
	return out
}

// Each reason is UPPER_SNAKE, unique, and has a row in docs/api.md's table
// of reasons, so a caller can find what it means and which code it comes with.
func TestReasonsAreDocumented(t *testing.T) {
	reasons := declaredReasons(t)
	if len(reasons) < 40 {
		t.Fatalf("parsed %d reasons from reasons.go", len(reasons))
	}
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for name, v := range reasons {
		if !upperSnake.MatchString(v) {
			t.Errorf("%s = %q is not UPPER_SNAKE", name, v)
		}
		if other, dup := seen[v]; dup {
			t.Errorf("%s and %s are both %q", name, other, v)
		}
		seen[v] = name
		if !strings.Contains(string(doc), "| `"+v+"` |") {
			t.Errorf("reason %s is not in docs/api.md's table of reasons (a row starting | `%s` |)", v, v)
		}
	}
}
