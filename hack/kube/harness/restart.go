package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// RestartAPIServer kills kube-apiserver with SIGKILL (a crash), leaves it
// down for down, and starts it again with the same flags on the same port
// and etcd; it returns once /readyz answers. Every client (the controller,
// the bridge, kwok, the binder) must find its way back by itself.
func (e *Env) RestartAPIServer(ctx context.Context, down time.Duration) error {
	i := -1
	for j, pr := range e.procs {
		if pr.name == "kube-apiserver" {
			i = j
		}
	}
	if i < 0 {
		return fmt.Errorf("no kube-apiserver in this bed")
	}
	old := e.procs[i]
	if err := old.cmd.Process.Kill(); err != nil {
		return err
	}
	<-old.done
	old.log.Close()
	select {
	case <-time.After(down):
	case <-ctx.Done():
		return ctx.Err()
	}
	log, err := os.OpenFile(filepath.Join(e.Dir, old.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(old.cmd.Path, old.cmd.Args[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("restart kube-apiserver: %w", err)
	}
	pr := &proc{name: old.name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(pr.done) }()
	e.procs[i] = pr
	return waitHTTP(ctx, e.Config.Host+"/readyz", token, 180*time.Second, pr)
}
