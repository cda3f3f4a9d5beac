package e2e

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// TestBridgeRunCodeInPythonImage: run_code through the in-cluster bridge in
// a real pod of the bed's python image: state kept between cells, numpy,
// a matplotlib figure drawn in the pod and returned as PNG, a timeout that
// interrupts without losing state, and a context that dies and is
// replaced.
func TestBridgeRunCodeInPythonImage(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	env.Apply(t, Template(ns, "python", PythonImage), Pool(ns, "python", "python", 1))
	env.WaitPoolReady(t, ns, "python", 1)
	c := env.bridgeClient(t, ns)
	ctx := Context(t)

	sb, err := c.Claim(ctx, "python")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sb.Delete(ctx) }()

	if ex, err := sb.RunCode(ctx, "import numpy as np; x = np.arange(3)"); err != nil || ex.Err() != nil {
		t.Fatalf("numpy import: %+v, %v", ex, err)
	}
	if ex, err := sb.RunCode(ctx, "x.sum()"); err != nil || ex.Text() != "3" {
		t.Fatalf("x.sum(): %+v, %v", ex, err)
	}
	ex, err := sb.RunCode(ctx, "import matplotlib.pyplot as plt\nplt.figure(figsize=(4, 3), dpi=50)\nplt.plot(x)\nimport socket; print(socket.gethostname())")
	if err != nil || ex.Err() != nil || len(ex.Results) != 1 {
		t.Fatalf("figure: %+v, %v", ex, err)
	}
	png := ex.Results[0].PNG()
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 24 {
		t.Fatalf("not a PNG: %q", png[:min(len(png), 16)])
	}
	if w, h := binary.BigEndian.Uint32(png[16:20]), binary.BigEndian.Uint32(png[20:24]); w > 200 || h > 150 || w < 100 || h < 75 {
		t.Errorf("figure of 4x3 in at 50 dpi is %dx%d", w, h)
	}
	pod := env.Pod(t, env.WaitSandboxReady(t, ns, sb.Name()))
	if got := ex.Stdout; got != pod.Name+"\n" && got != pod.Spec.Hostname+"\n" {
		t.Errorf("the figure's cell ran on host %q, want the pod %s", got, pod.Name)
	}

	ex, err = sb.RunCode(ctx, "import time; time.sleep(600)", sandpod.WithCodeTimeout(2*time.Second))
	if err != nil || !ex.TimedOut || ex.ContextLost || ex.Error == nil || ex.Error.Name != "KeyboardInterrupt" {
		t.Fatalf("timeout: %+v, %v", ex, err)
	}
	if ex, err := sb.RunCode(ctx, "int(x.sum())"); err != nil || ex.Text() != "3" {
		t.Fatalf("state after the interrupt: %+v, %v", ex, err)
	}
	ex, err = sb.RunCode(ctx, "import os; os._exit(7)")
	if err != nil || !errors.Is(ex.Err(), sandpod.ErrCodeContextLost) {
		t.Fatalf("os._exit: %+v, %v", ex, err)
	}
	if ex, err := sb.RunCode(ctx, "'x' in globals()"); err != nil || ex.Text() != "False" {
		t.Fatalf("a new default context: %+v, %v", ex, err)
	}
}
