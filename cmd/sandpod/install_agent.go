package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func init() {
	register("install-agent", "copy the agent binary to DEST (the init container of a sandbox pod)", runInstallAgent)
}

// runInstallAgent copies the agent binary to DEST, atomically and
// executable, so the sandbox container (any image) can run it as its agent:
// sandpod-agent beside this binary when the image has it (the small agent,
// which takes `sandpod agent`'s arguments, a leading "agent" included), else
// this binary itself.
func runInstallAgent(_ context.Context, args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: sandpod install-agent DEST")
		return 2
	}
	if err := installAgent(args[0]); err != nil {
		fmt.Fprintln(os.Stderr, "sandpod install-agent:", err)
		return 1
	}
	return 0
}

func installAgent(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	src, err := os.Open(agentSource(self))
	if err != nil {
		return err
	}
	defer src.Close()
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".sandpod-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, src); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dest)
}

// agentSource is the file install-agent copies: sandpod-agent beside self
// when it is there, else self.
func agentSource(self string) string {
	small := filepath.Join(filepath.Dir(self), "sandpod-agent")
	if fi, err := os.Stat(small); err == nil && fi.Mode().IsRegular() {
		return small
	}
	return self
}
