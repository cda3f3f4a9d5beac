package goclient_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// TestHandlePhaseAfterAutoResume: a call that auto-resumed a paused
// sandbox (the python template auto-resumes) leaves the handle's phase
// equal to the server's, whatever the call was.
func TestHandlePhaseAfterAutoResume(t *testing.T) {
	ctx := testContext(t)
	c := dial(t, serverAddr)
	calls := map[string]func(ctx context.Context, sb *sandpod.Sandbox) error{
		"ReadFile": func(ctx context.Context, sb *sandpod.Sandbox) error {
			_, err := sb.Files().ReadFile(ctx, "note.txt")
			return err
		},
		"WriteFile": func(ctx context.Context, sb *sandpod.Sandbox) error {
			_, err := sb.Files().WriteFile(ctx, "other.txt", []byte("x"))
			return err
		},
		// The agent's own refusal shows the sandbox ran as much as a success.
		"Exists of a missing file": func(ctx context.Context, sb *sandpod.Sandbox) error {
			ok, err := sb.Files().Exists(ctx, "missing.txt")
			if err == nil && ok {
				return errors.New("missing.txt exists")
			}
			return err
		},
		"ReadFile of a missing file": func(ctx context.Context, sb *sandpod.Sandbox) error {
			_, err := sb.Files().ReadFile(ctx, "missing.txt")
			if errors.Is(err, sandpod.ErrFileNotFound) {
				return nil
			}
			return fmt.Errorf("read of a missing file: %v, want ErrFileNotFound", err)
		},
		"Watch of a missing directory": func(ctx context.Context, sb *sandpod.Sandbox) error {
			_, err := sb.Files().Watch(ctx, "missing-dir")
			if errors.Is(err, sandpod.ErrFileNotFound) {
				return nil
			}
			return fmt.Errorf("watch of a missing directory: %v, want ErrFileNotFound", err)
		},
		"Stat": func(ctx context.Context, sb *sandpod.Sandbox) error {
			_, err := sb.Files().Stat(ctx, "note.txt")
			return err
		},
		"List": func(ctx context.Context, sb *sandpod.Sandbox) error {
			_, err := sb.Files().List(ctx, ".")
			return err
		},
		"Run": func(ctx context.Context, sb *sandpod.Sandbox) error {
			_, err := sb.Run(ctx, "true", sandpod.WithCheck())
			return err
		},
		"RunCode": func(ctx context.Context, sb *sandpod.Sandbox) error {
			_, err := sb.RunCode(ctx, "1+1")
			return err
		},
		"Watch": func(ctx context.Context, sb *sandpod.Sandbox) error {
			w, err := sb.Files().Watch(ctx, ".")
			if err == nil {
				_ = w.Close()
			}
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			sb := claim(t, c, "python")
			if _, err := sb.Files().WriteFile(ctx, "note.txt", []byte("kept")); err != nil {
				t.Fatal(err)
			}
			if err := sb.Pause(ctx); err != nil {
				t.Fatal(err)
			}
			if ph := serverPhase(t, c, sb); ph != sandpod.PhasePaused {
				t.Fatalf("the server says %s after pause", ph)
			}
			if err := call(ctx, sb); err != nil {
				t.Fatalf("%s on a paused sandbox that auto-resumes: %v", name, err)
			}
			server := serverPhase(t, c, sb)
			if server != sandpod.PhaseRunning || sb.Info().Phase != server {
				t.Errorf("after %s the handle says %s, the server %s", name, sb.Info().Phase, server)
			}
		})
	}
}

// TestHandlePhaseFromARefusal: a refusal that names the phase sets it on
// the handle ("cold" does not auto-resume).
func TestHandlePhaseFromARefusal(t *testing.T) {
	ctx := testContext(t)
	c := dial(t, serverAddr)
	sb := claim(t, c, "cold")
	other, err := c.Get(ctx, sb.Name())
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Pause(ctx); err != nil { // through another handle: sb still says Running
		t.Fatal(err)
	}
	if ph := sb.Info().Phase; ph != sandpod.PhaseRunning {
		t.Fatalf("before the refusal the handle says %s", ph)
	}
	_, err = sb.Files().ReadFile(ctx, "anything")
	var e *sandpod.Error
	if !errors.As(err, &e) || e.Reason != sandpod.ReasonSandboxPaused {
		t.Fatalf("read on a paused sandbox: %v, want reason %s", err, sandpod.ReasonSandboxPaused)
	}
	if ph, server := sb.Info().Phase, serverPhase(t, c, sb); ph != sandpod.PhasePaused || server != ph {
		t.Errorf("after the refusal the handle says %s, the server %s", ph, server)
	}
}

func serverPhase(t *testing.T, c *sandpod.Client, sb *sandpod.Sandbox) sandpod.Phase {
	t.Helper()
	got, err := c.Get(testContext(t), sb.Name())
	if err != nil {
		t.Fatal(err)
	}
	return got.Info().Phase
}
