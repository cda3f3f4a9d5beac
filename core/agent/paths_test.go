package agent

import (
	"strings"
	"testing"
)

func TestCleanPath(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    string
		wantErr string
	}{
		"empty is the workspace": {in: "", want: "."},
		"slash is the root":      {in: "/", want: "/"},
		"relative":               {in: "a/b.txt", want: "a/b.txt"},
		"absolute stays":         {in: "/app/main.py", want: "/app/main.py"},
		"absolute cleaned":       {in: "//app/./x//", want: "/app/x"},
		"dots and slashes":       {in: "./a//b/./c/", want: "a/b/c"},
		"dotdot refused":         {in: "../etc/passwd", wantErr: `".."`},
		"inner dotdot refused":   {in: "a/../../b", wantErr: `".."`},
		"harmless dotdot too":    {in: "a/../b", wantErr: `".."`},
		"dotdot-like name is ok": {in: "a/..b/c..", want: "a/..b/c.."},
		"nul refused":            {in: "a\x00b", wantErr: "NUL"},
		"too long":               {in: strings.Repeat("a", MaxPathLen+1), wantErr: "limit"},
		"name at the limit":      {in: "d/" + strings.Repeat("n", MaxNameLen), want: "d/" + strings.Repeat("n", MaxNameLen)},
		"name too long":          {in: "d/" + strings.Repeat("n", MaxNameLen+1) + "/f", wantErr: "a name in the path is 256 bytes long, the limit is 255"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := CleanPath(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("CleanPath(%q) = %q, %v; want error with %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("CleanPath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestTempNameFits(t *testing.T) {
	for _, n := range []int{1, 200, MaxNameLen - 22, MaxNameLen} {
		base := strings.Repeat("b", n)
		tmp := tempName(base)
		if len(tmp) > MaxNameLen || !strings.HasPrefix(tmp, ".b") || strings.Contains(tmp, "/") {
			t.Errorf("tempName of a %d-byte name = %q (%d bytes)", n, tmp, len(tmp))
		}
	}
}

// FuzzCleanPath checks that an accepted path is clean: no "..", no NUL, no
// over-long name, and the same after cleaning again.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"", "/", "a/b", "../x", "a/../../b", "/..", "a\x00", "....//..."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := CleanPath(p)
		if err != nil {
			return
		}
		if got == ".." || strings.HasPrefix(got, "../") || strings.Contains(got, "/../") || strings.HasSuffix(got, "/..") || strings.Contains(got, "\x00") {
			t.Fatalf("CleanPath(%q) = %q climbs", p, got)
		}
		if again, err := CleanPath(got); err != nil || again != got {
			t.Fatalf("CleanPath(%q) = %q, which cleans again to %q, %v", p, got, again, err)
		}
		for _, name := range strings.Split(got, "/") {
			if len(name) > MaxNameLen {
				t.Fatalf("CleanPath(%q) = %q has a name over %d bytes", p, got, MaxNameLen)
			}
		}
	})
}
