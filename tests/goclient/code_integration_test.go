package goclient_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

func TestRunCodeKeepsStateAndReturnsFigures(t *testing.T) {
	ctx := testContext(t)
	c := dial(t, serverAddr)
	sb := claim(t, c, "python")

	if _, err := sb.RunCode(ctx, "import numpy as np; x = np.arange(3)"); err != nil {
		t.Fatal(err)
	}
	ex, err := sb.RunCode(ctx, "x.sum()")
	if err != nil || ex.Text() != "3" {
		t.Fatalf("x.sum(): %+v, %v", ex, err)
	}
	var streamed strings.Builder
	ex, err = sb.RunCode(ctx, "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nprint('drawn')",
		sandpod.OnStdout(func(s string) { streamed.WriteString(s) }))
	if err != nil || ex.Err() != nil || streamed.String() != "drawn\n" || len(ex.Results) != 1 {
		t.Fatalf("figure: %+v, %v", ex, err)
	}
	if png := ex.Results[0].PNG(); !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("the figure is not a PNG: %q", png[:min(16, len(png))])
	}

	ex, err = sb.RunCode(ctx, "1/0")
	if err != nil || !errors.Is(ex.Err(), sandpod.ErrCodeFailed) || ex.Error.Name != "ZeroDivisionError" {
		t.Fatalf("1/0: %+v, %v", ex, err)
	}
	ex, err = sb.RunCode(ctx, "import time; time.sleep(600)", sandpod.WithCodeTimeout(time.Second))
	if err != nil || !ex.TimedOut || ex.ContextLost {
		t.Fatalf("timeout: %+v, %v", ex, err)
	}
	if ex, err := sb.RunCode(ctx, "int(x.sum())"); err != nil || ex.Text() != "3" {
		t.Fatalf("state after the interrupt: %+v, %v", ex, err)
	}
}

func TestCodeContexts(t *testing.T) {
	ctx := testContext(t)
	c := dial(t, serverAddr)
	sb := claim(t, c, "python")

	cc, info, err := sb.CreateCodeContext(ctx, sandpod.CodeContextSpec{ID: "mine"})
	if err != nil || info.ID != "mine" || info.Language != "python" {
		t.Fatalf("create: %+v, %v", info, err)
	}
	if _, err := cc.RunCode(ctx, "v = 1"); err != nil {
		t.Fatal(err)
	}
	if ex, _ := sb.RunCode(ctx, "v"); ex == nil || ex.Error == nil || ex.Error.Name != "NameError" {
		t.Fatalf("the default context sees another's variable: %+v", ex)
	}
	list, err := sb.CodeContexts(ctx)
	if err != nil || len(list) != 2 || list[1].ID != "mine" || list[1].ExecutionCount != 1 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	ex, err := cc.RunCode(ctx, "import os; os._exit(1)")
	if err != nil || !errors.Is(ex.Err(), sandpod.ErrCodeContextLost) {
		t.Fatalf("os._exit: %+v, %v", ex, err)
	}
	if _, err := cc.RunCode(ctx, "v"); !errors.Is(err, sandpod.ErrCodeContextNotFound) {
		t.Fatalf("a dead context: %v", err)
	}
	if err := sb.CodeContext("nope").Delete(ctx); !errors.Is(err, sandpod.ErrCodeContextNotFound) {
		t.Fatalf("delete of an unknown context: %v", err)
	}
	if _, err := sb.RunCode(ctx, "1", sandpod.WithLanguage("r")); !errors.Is(err, sandpod.ErrInvalidArgument) {
		t.Fatalf("language r: %v", err)
	}
}
