// Command coredns is the node bed's cluster DNS: CoreDNS with only the
// plugins the bed needs (no forward: pods resolve in-cluster names, and
// nothing on the bed may reach outside addresses). Its own module so that
// `go build ./...` at the repository root leaves it alone;
// hack/testbed/coredns.sh builds it.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

// directives are the plugins in the order they run, a subset of CoreDNS's
// plugin.cfg kept in its order.
var directives = []string{"ready", "health", "errors", "cache", "kubernetes"}

func init() { dnsserver.Directives = directives }

func main() { coremain.Run() }
