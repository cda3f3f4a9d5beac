// Package local_test checks the scripts that build what `make run` needs.
package local_test

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// with sources progress.sh and runs script with bash, returning what it
// printed (stdout and stderr).
func with(t *testing.T, env []string, script string) string {
	t.Helper()
	cmd := exec.Command("bash", "-c", "source ./progress.sh\n"+script)
	cmd.Env = append(cmd.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return string(out)
}

// A first `make run` compiles for minutes, and go build says nothing while
// it compiles: the terminal gets what is going on, why, for how long so far,
// and when it is done.
func TestALongBuildSaysWhatItIsDoing(t *testing.T) {
	out := with(t, []string{"PROGRESS_FIRST=1", "PROGRESS_EVERY=1"},
		`with_progress "building bin/sandpod" "about 900 packages: 2 to 4 minutes" sleep 3.5`)
	// Seconds as a loaded machine counts them: the lines, not the figures.
	for _, want := range []string{
		`^\[\d\d:\d\d:\d\d\] still building bin/sandpod after \ds: about 900 packages: 2 to 4 minutes$`,
		`^\[\d\d:\d\d:\d\d\] still building bin/sandpod \(\ds so far\)$`,
		`^\[\d\d:\d\d:\d\d\] done building bin/sandpod in \ds$`,
	} {
		if !regexp.MustCompile("(?m)" + want).MatchString(out) {
			t.Errorf("no line matching %s in:\n%s", want, out)
		}
	}
}

// A warm build, done in seconds, prints nothing more; the command's exit
// status passes through.
func TestAQuickBuildSaysNothingMore(t *testing.T) {
	if out := with(t, nil, `with_progress "building bin/sandpod" "hint" true`); out != "" {
		t.Errorf("a quick command printed %q", out)
	}
	out := with(t, nil, `with_progress "building bin/sandpod" "hint" sh -c 'echo compiler error; exit 3' || echo "status $?"`)
	if strings.TrimSpace(out) != "compiler error\nstatus 3" {
		t.Errorf("a failing command: %q", out)
	}
	if out := with(t, nil, `human_secs 75; human_secs 9`); out != "1m15s\n9s\n" {
		t.Errorf("human_secs: %q", out)
	}
}
