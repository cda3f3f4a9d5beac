package harness

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// SnapshotterClientModule is the external-snapshotter's client module: its
// config/crd holds the CSI snapshot CRDs (VolumeSnapshot, -Class,
// -Content). The node bed installs the same files (hack/testbed/csi.sh).
const SnapshotterClientModule = "github.com/kubernetes-csi/external-snapshotter/client/v8@v8.7.0"

// SnapshotCRDFiles are the CSI snapshot CRDs from the Go module cache
// (downloaded through the module proxy once).
func SnapshotCRDFiles() ([]string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", SnapshotterClientModule)
	cmd.Dir = os.TempDir() // outside sandpod's module: a plain download
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go mod download %s: %w", SnapshotterClientModule, err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return nil, fmt.Errorf("go mod download %s: no module directory in %q", SnapshotterClientModule, out)
	}
	var files []string
	for _, kind := range []string{"volumesnapshotclasses", "volumesnapshotcontents", "volumesnapshots"} {
		f := filepath.Join(m.Dir, "config", "crd", "snapshot.storage.k8s.io_"+kind+".yaml")
		if _, err := os.Stat(f); err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}
