// Command kube-router-netpol is kube-router's NetworkPolicy controller and
// nothing else: the node bed's policy enforcer (hack/testbed/kube-router.sh
// builds it). kube-router's own command links BGP routing, IPVS service
// proxying and load balancer allocation too, which the bed does not run:
// this one builds in about half the time. It takes kube-router's flags (the
// ones of its firewall matter: --kubeconfig, --hostname-override,
// --service-cluster-ip-range, --iptables-sync-period) and serves
// /healthz on --health-addr once the controller has synced.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cloudnativelabs/kube-router/v2/pkg/controllers/netpol"
	"github.com/cloudnativelabs/kube-router/v2/pkg/healthcheck"
	"github.com/cloudnativelabs/kube-router/v2/pkg/options"
	"github.com/spf13/pflag"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kube-router-netpol:", err)
		os.Exit(1)
	}
}

func run() error {
	config := options.NewKubeRouterConfig()
	config.AddFlags(pflag.CommandLine)
	healthAddr := pflag.String("health-addr", "127.0.0.1:20244", "address of /healthz")
	klog.InitFlags(flag.CommandLine)
	pflag.Parse()
	_ = flag.Set("v", config.VLevel)
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root (iptables, ipset)")
	}
	rest, err := clientcmd.BuildConfigFromFlags(config.Master, config.Kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(rest)
	if err != nil {
		return err
	}

	stop := make(chan struct{})
	factory := informers.NewSharedInformerFactory(client, 0)
	pods := factory.Core().V1().Pods().Informer()
	namespaces := factory.Core().V1().Namespaces().Informer()
	policies := factory.Networking().V1().NetworkPolicies().Informer()
	factory.Start(stop)
	factory.WaitForCacheSync(stop)

	iptables, ipsets, err := netpol.NewIPTablesHandlers(config)
	if err != nil {
		return err
	}
	var ipsetMutex sync.Mutex
	npc, err := netpol.NewNetworkPolicyController(client, config, pods, policies, namespaces, &ipsetMutex, iptables, ipsets)
	if err != nil {
		return err
	}
	if _, err := pods.AddEventHandler(npc.PodEventHandler); err != nil {
		return err
	}
	if _, err := namespaces.AddEventHandler(npc.NamespaceEventHandler); err != nil {
		return err
	}
	if _, err := policies.AddEventHandler(npc.NetworkPolicyEventHandler); err != nil {
		return err
	}

	// Healthy once the controller has sent a heartbeat (after its first
	// full sync) and while its last one is recent.
	var last atomic.Int64
	beats := make(chan *healthcheck.ControllerHeartbeat, 16)
	go func() {
		for b := range beats {
			last.Store(b.LastHeartBeat.UnixNano())
		}
	}()
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		l := last.Load()
		if l == 0 || time.Since(time.Unix(0, l)) > 2*config.IPTablesSyncPeriod+time.Minute {
			http.Error(w, "no recent sync", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	srv := &http.Server{Addr: *healthAddr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
			klog.Fatalf("health server: %v", err)
		}
	}()

	var wg sync.WaitGroup
	wg.Add(1)
	go npc.Run(beats, stop, &wg)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	close(stop)
	wg.Wait()
	return nil
}
