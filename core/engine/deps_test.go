package engine

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSpeaksItsOwnTypes checks that the engine's code does not speak the
// contract: its requests, answers and errors are its own (view.go,
// errors.go) and bridge/local converts them. The only gRPC it uses is the
// client of its agents' AgentService (health checks).
func TestSpeaksItsOwnTypes(t *testing.T) {
	contract := map[string]bool{
		"google.golang.org/grpc/codes":                       true,
		"google.golang.org/grpc/status":                      true,
		"google.golang.org/protobuf/types/known/durationpb":  true,
		"google.golang.org/protobuf/types/known/timestamppb": true,
		"github.com/sandpod/sandpod/core/api/protoconv":      true,
		"github.com/sandpod/sandpod/core/agentconn":          false, // the secret's metadata key only
		"github.com/sandpod/sandpod/proto/sandpod/v1":        false, // AgentService client only
	}
	agentClients := map[string]bool{"liveness.go": true, "workload.go": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := parser.ParseFile(fset, f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			banned, listed := contract[path]
			if listed && (banned || !agentClients[f]) {
				t.Errorf("%s imports %s: the engine answers in its own types; convert in bridge/local", f, path)
			}
		}
	}
}
