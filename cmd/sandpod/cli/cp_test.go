package cli

import "testing"

func TestParseCopyArg(t *testing.T) {
	for _, tc := range []struct {
		in            string
		sandbox, path string
		stdio         bool
	}{
		{in: "sb:/workspace/dir", sandbox: "sb", path: "/workspace/dir"},
		{in: "python-x1:", sandbox: "python-x1", path: ""},
		{in: "sb:rel/file", sandbox: "sb", path: "rel/file"},
		{in: "-", path: "-", stdio: true},
		{in: "./a:b", path: "./a:b"},
		{in: "/abs:x", path: "/abs:x"},
		{in: "~/x:y", path: "~/x:y"},
		{in: "Upper:x", path: "Upper:x"}, // not a sandbox name
		{in: "C:\\dir", path: "C:\\dir"},
		{in: "plain.txt", path: "plain.txt"},
		{in: "-sb:x", path: "-sb:x"},
	} {
		got := parseCopyArg(tc.in)
		if got.sandbox != tc.sandbox || got.path != tc.path || got.stdio != tc.stdio {
			t.Errorf("%q: %+v", tc.in, got)
		}
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 3 << 20: "3.0 MiB", 5 << 30: "5.0 GiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("%d: %q, want %q", n, got, want)
		}
	}
}
