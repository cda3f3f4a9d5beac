// Command pause is the node bed's pod sandbox process
// (registry.k8s.io/pause:3.10 on a bed without a registry): it holds the
// pod's namespaces, reaps the zombies that land on it, and exits on SIGINT or
// SIGTERM. Built static (CGO_ENABLED=0) by hack/testbed/images.sh.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	children := make(chan os.Signal, 16)
	signal.Notify(children, syscall.SIGCHLD)
	go func() {
		for range children {
			for {
				var ws syscall.WaitStatus
				if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
					break
				}
			}
		}
	}()
	<-stop
	os.Exit(0)
}
