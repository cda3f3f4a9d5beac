// Package apicost_test measures what sandpod's writes cost kube-apiserver
// on the kwok bed (hack/kube/harness): a claim's create and status
// (BenchmarkClaimWriteCost) and the parts of a warm take's patch
// (BenchmarkClaimPatchCost). Benchmarks only: run them with -bench.
package apicost_test

import (
	"context"
	"testing"

	"github.com/sandpod/sandpod/hack/kube/harness"
)

var env *harness.Env

func TestMain(m *testing.M) { harness.Main(m, &env) }

var ctx = context.Background()
