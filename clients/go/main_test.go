package sandpod_test

import (
	"flag"
	"fmt"
	"os"
	"testing"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// EnvExampleAddress names the address of a running `sandpod serve`, with a
// warm "python" template, that the examples run against. This module cannot
// start one (the server is the root module, which it must not depend on):
// tests/goclient starts one and runs the examples with it set. Without it,
// `go test` here runs the unit tests and skips the examples.
const EnvExampleAddress = "SANDPOD_EXAMPLE_ADDRESS"

// serverAddr is the address the examples dial.
var serverAddr string

func TestMain(m *testing.M) {
	flag.Parse()
	serverAddr = os.Getenv(EnvExampleAddress)
	// Hermetic: the caller's settings must not reach the tests' clients.
	for _, k := range []string{sandpod.EnvAddress, sandpod.EnvToken, sandpod.EnvNamespace} {
		_ = os.Unsetenv(k)
	}
	if serverAddr == "" {
		if err := flag.Set("test.skip", "^Example"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}
