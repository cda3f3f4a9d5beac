package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"
)

// profileCapture takes a CPU profile of the server (through its --pprof
// endpoint) and of the benchmark itself over the same window.
type profileCapture struct {
	bin, outDir string
	done        chan struct{}
	ServerFile  string `json:"server_profile"`
	ClientFile  string `json:"client_profile"`
	ServerTop   string `json:"server_top"`
	ClientTop   string `json:"client_top"`
	Err         string `json:"error,omitempty"`
}

// profileDir is where captured profiles go (set from -out).
var profileDir string

func startProfile(s *server, d time.Duration) *profileCapture {
	p := &profileCapture{bin: s.bin, outDir: profileDir, done: make(chan struct{})}
	_ = os.MkdirAll(p.outDir, 0o755)
	p.ServerFile = filepath.Join(p.outDir, "server-exec-throughput.cpu.pprof")
	p.ClientFile = filepath.Join(p.outDir, "bench-exec-throughput.cpu.pprof")
	cf, err := os.Create(p.ClientFile)
	if err == nil {
		if err := pprof.StartCPUProfile(cf); err != nil {
			cf.Close()
			cf = nil
		}
	}
	secs := int(d.Seconds())
	if secs < 1 {
		secs = 1
	}
	go func() {
		defer close(p.done)
		resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", s.pprof, secs))
		if cf != nil {
			pprof.StopCPUProfile()
			cf.Close()
		}
		if err != nil {
			p.Err = err.Error()
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			p.Err = fmt.Sprintf("server profile: status %d %v", resp.StatusCode, err)
			return
		}
		if err := os.WriteFile(p.ServerFile, b, 0o644); err != nil {
			p.Err = err.Error()
		}
	}()
	return p
}

func (p *profileCapture) wait() *profileCapture {
	<-p.done
	p.ServerTop = pprofTop(p.bin, p.ServerFile)
	self, _ := os.Executable()
	p.ClientTop = pprofTop(self, p.ClientFile)
	return p
}

func pprofTop(bin, file string) string {
	if _, err := os.Stat(file); err != nil {
		return ""
	}
	var out bytes.Buffer
	cmd := exec.Command("go", "tool", "pprof", "-top", "-nodecount=25", bin, file)
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run()
	return strings.TrimSpace(out.String())
}
