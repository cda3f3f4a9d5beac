package cli

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestMarkerWriterSplitsAnywhere: output with markers, cut into two writes
// at every position, comes out without them and with the statuses in
// order.
func TestMarkerWriterSplitsAnywhere(t *testing.T) {
	marker := "\x1esandpod-0123 "
	stream := "hello\n" + marker + "0\n" + "no newline" + marker + "1\n" + "\x1esand is not it\n" + marker + "more\n" + "tail\x1esan"
	wantOut := "hello\nno newline\x1esand is not it\ntail"
	for cut := 0; cut <= len(stream); cut++ {
		var out bytes.Buffer
		var got []string
		w := &markerWriter{out: &out, marker: []byte(marker), found: func(s string) { got = append(got, s) }}
		for _, part := range []string{stream[:cut], stream[cut:]} {
			if n, err := w.Write([]byte(part)); err != nil || n != len(part) {
				t.Fatalf("cut %d: Write = %d, %v", cut, n, err)
			}
		}
		// "\x1esan" may still start a marker: held back, never lost
		// while the stream goes on.
		if out.String()+string(w.pending) != wantOut+"\x1esan" {
			t.Fatalf("cut %d: out %q + held %q", cut, out.String(), w.pending)
		}
		if strings.Join(got, ",") != "0,1,more" {
			t.Fatalf("cut %d: statuses %v", cut, got)
		}
	}
}

// TestLineScript runs the script the shell session sends through the
// host's /bin/sh: complete commands run, incomplete ones ask for more,
// syntax errors are shown without ending the shell, quotes survive.
func TestLineScript(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("no sh: %v", err)
	}
	const marker = "\x1eM "
	for _, tc := range []struct {
		src, wantOut, wantStatus, wantErr string
	}{
		{src: "echo hi\n", wantOut: "hi\n", wantStatus: "0"},
		{src: "false\n", wantStatus: "1"},
		{src: "echo 'it'\\''s' \"$((6*7))\"\n", wantOut: "it's 42\n", wantStatus: "0"},
		{src: "for i in 1 2\n", wantStatus: "more"},
		{src: "for i in 1 2\ndo echo $i\ndone\n", wantOut: "1\n2\n", wantStatus: "0"},
		{src: "echo \"open\n", wantStatus: "more"},
		{src: "if true\n", wantStatus: "more"},
		{src: "fi\n", wantStatus: "2", wantErr: "unexpected"},
		{src: "cat\n", wantStatus: "0"}, // reads the empty stdin, not the session's
		{src: "exit 3\n", wantStatus: ""},
	} {
		script := lineScript(sh, tc.src, marker) + "echo after\n"
		cmd := exec.Command(sh)
		cmd.Stdin = strings.NewReader(script + "echo end\n")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		_ = cmd.Run()
		var statuses []string
		var clean bytes.Buffer
		w := &markerWriter{out: &clean, marker: []byte(marker), found: func(s string) { statuses = append(statuses, s) }}
		_, _ = w.Write(out.Bytes())
		if tc.wantStatus == "" {
			// exit ends the shell: nothing after it runs.
			if len(statuses) != 0 || strings.Contains(clean.String(), "after") {
				t.Errorf("%q: the shell went on: %q %v", tc.src, clean.String(), statuses)
			}
			continue
		}
		if len(statuses) != 1 || statuses[0] != tc.wantStatus {
			t.Errorf("%q: statuses %v, want [%s] (stderr %q)", tc.src, statuses, tc.wantStatus, errb.String())
		}
		if want := tc.wantOut + "after\nend\n"; clean.String() != want {
			t.Errorf("%q: output %q, want %q", tc.src, clean.String(), want)
		}
		if tc.wantErr != "" && !strings.Contains(errb.String(), tc.wantErr) {
			t.Errorf("%q: stderr %q does not say %q", tc.src, errb.String(), tc.wantErr)
		}
	}
}
