package sandpod_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestGoLineAsksOnlyForWhatIsNeeded: the go line of the client's go.mod,
// and of the stubs' (proto/go.mod), is a minimum forced on every program
// that imports the client, so it must be the lowest the dependencies allow
// (the highest go line among them), with no toolchain line.
func TestGoLineAsksOnlyForWhatIsNeeded(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command: %v", err) // go test itself runs from one
	}
	for _, dir := range []string{".", filepath.Join("..", "..", "proto")} {
		t.Run(dir, func(t *testing.T) {
			var mod struct {
				Go        string
				Toolchain string
			}
			edit := exec.Command(goBin, "mod", "edit", "-json")
			edit.Dir = dir
			out, err := edit.Output()
			if err != nil {
				t.Fatalf("go mod edit -json: %v", err)
			}
			if err := json.Unmarshal(out, &mod); err != nil {
				t.Fatal(err)
			}
			list := exec.Command(goBin, "list", "-m", "-json", "all")
			list.Dir = dir
			out, err = list.Output()
			if err != nil {
				t.Fatalf("go list -m -json all: %v", err)
			}
			need, by := "", ""
			dec := json.NewDecoder(bytes.NewReader(out))
			for {
				var m struct {
					Path      string
					Main      bool
					GoVersion string
				}
				if err := dec.Decode(&m); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					t.Fatal(err)
				}
				if !m.Main && compareGo(m.GoVersion, need) > 0 {
					need, by = m.GoVersion, m.Path
				}
			}
			if mod.Go != need {
				t.Errorf("go.mod says go %s; its dependencies need go %s (%s): ask for that", mod.Go, need, by)
			}
			if mod.Toolchain != "" {
				t.Errorf("go.mod has toolchain %s; the client needs none", mod.Toolchain)
			}
		})
	}
}

// compareGo compares Go versions such as "1.26" and "1.26.0" number by
// number (a missing number counts as -1, so "1.26" < "1.26.0", as Go
// orders them; release candidates do not occur among the dependencies).
func compareGo(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		x, y := -1, -1
		if i < len(as) && as[i] != "" {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) && bs[i] != "" {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}
