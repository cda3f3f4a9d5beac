package goclient_test

import (
	"errors"
	"strings"
	"testing"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// TestSandboxNotFoundMeansTheSandbox: code that claims a new sandbox on
// ErrSandboxNotFound must not do so for a typo in a program name, a missing
// working directory, a missing file or an unknown template.
func TestSandboxNotFoundMeansTheSandbox(t *testing.T) {
	ctx := testContext(t)
	c := dial(t, serverAddr)
	sb := claim(t, c, "python")

	// A program that is not found is a result, as in a shell.
	res, err := sb.RunArgv(ctx, []string{"no-such-prog", "--flag"})
	if err != nil || res.ExitCode != 127 || !strings.Contains(string(res.Stderr), `"no-such-prog": not found`) {
		t.Errorf("argv no-such-prog: %+v (stderr %q), %v; want exit 127 and a line on stderr", res, resStderr(res), err)
	}
	res, err = sb.Run(ctx, "no-such-prog")
	if err != nil || res.ExitCode != 127 {
		t.Errorf("sh -c no-such-prog: %+v, %v; want exit 127", res, err)
	}
	var ce *sandpod.CommandError
	if _, err := sb.RunArgv(ctx, []string{"no-such-prog"}, sandpod.WithCheck()); !errors.As(err, &ce) || ce.ExitCode != 127 {
		t.Errorf("argv no-such-prog with check: %v, want a *CommandError with exit 127", err)
	}

	type outcome struct {
		what      string
		err, want error
	}
	var outcomes []outcome
	_, err = sb.Run(ctx, "true", sandpod.WithDir("no/such/dir"))
	outcomes = append(outcomes, outcome{"missing working dir", err, sandpod.ErrFailedPrecondition})
	_, err = sb.Files().ReadFile(ctx, "no-such-file")
	outcomes = append(outcomes, outcome{"read of a missing file", err, sandpod.ErrFileNotFound})
	_, err = sb.Files().List(ctx, "no-such-dir")
	outcomes = append(outcomes, outcome{"list of a missing dir", err, sandpod.ErrFileNotFound})
	_, err = c.Claim(ctx, "no-such-template")
	outcomes = append(outcomes, outcome{"claim of an unknown template", err, sandpod.ErrNotFound})
	for _, o := range outcomes {
		if !errors.Is(o.err, o.want) || errors.Is(o.err, sandpod.ErrSandboxNotFound) {
			t.Errorf("%s: %v, want %v and not ErrSandboxNotFound", o.what, o.err, o.want)
		}
	}
	if ok, err := sb.Files().Exists(ctx, "no-such-file"); ok || err != nil {
		t.Errorf("Exists of a missing file: %v, %v; want false, nil", ok, err)
	}

	// A deleted sandbox is ErrSandboxNotFound, whatever the call.
	gone := claim(t, c, "python")
	if err := gone.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	_, runErr := gone.Run(ctx, "true")
	_, readErr := gone.Files().ReadFile(ctx, "x")
	_, existsErr := gone.Files().Exists(ctx, "x")
	for name, err := range map[string]error{"run": runErr, "read": readErr, "exists": existsErr, "delete again": gone.Delete(ctx)} {
		if !errors.Is(err, sandpod.ErrSandboxNotFound) || !errors.Is(err, sandpod.ErrNotFound) {
			t.Errorf("%s on a deleted sandbox: %v, want ErrSandboxNotFound", name, err)
		}
	}
}

func resStderr(r *sandpod.Result) string {
	if r == nil {
		return ""
	}
	return string(r.Stderr)
}
