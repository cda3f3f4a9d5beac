package main

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestParseAllowlist(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    allowlist
		wantErr string
	}{
		"comments and blank lines": {
			in:   "# why this list\n\n  # indented comment\npkg/a TestX needs arm64\n",
			want: allowlist{{"pkg/a", "TestX"}: "needs arm64"},
		},
		"a subtest": {
			in:   "pkg/a TestX/sub one two\n",
			want: allowlist{{"pkg/a", "TestX/sub"}: "one two"},
		},
		"no reason": {in: "pkg/a TestX\n", wantErr: "line 1"},
		"twice":     {in: "p T a\np T b\n", wantErr: "listed twice"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseAllowlist(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s: %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

// testdata/sample.json is a real `go test -json` run of a package with a
// passing, a skipping and a failing test (subtests: one passes, one fails,
// one skips).
func TestGoStream(t *testing.T) {
	tests := map[string]struct {
		verbose  bool
		want     []string // lines, in this order
		wantNone []string
	}{
		"plain": {
			want: []string{
				"--- SKIP: TestSkip (0.00s)", "no widget here",
				"    --- SKIP: TestFail/skipped", "        a_test.go:10: arm64 only",
				"--- FAIL: TestFail (0.00s)", "    --- FAIL: TestFail/bad", "        a_test.go:9: boom",
				"FAIL\tsample\t",
			},
			wantNone: []string{"=== RUN", "quiet", "--- PASS"},
		},
		"verbose": {
			verbose: true,
			want:    []string{"=== RUN   TestPass", "quiet", "--- PASS: TestPass", "--- SKIP: TestSkip", "--- FAIL: TestFail/bad", "FAIL\tsample\t"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open("testdata/sample.json")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var out strings.Builder
			res, err := goStream(f, &out, tc.verbose)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Failed {
				t.Error("a failed test, not reported as failed")
			}
			var got []skipKey
			for _, s := range res.Skips {
				got = append(got, s.Key)
			}
			if want := []skipKey{{"sample", "TestSkip"}, {"sample", "TestFail/skipped"}}; !slices.Equal(got, want) {
				t.Errorf("skips %v, want %v", got, want)
			}
			if r := res.Skips[0].Reason; !strings.Contains(r, "no widget here") || strings.Contains(r, "--- SKIP") {
				t.Errorf("reason %q", r)
			}
			s, at := out.String(), 0
			for _, w := range tc.want {
				i := strings.Index(s[at:], w)
				if i < 0 {
					t.Fatalf("output lacks %q after offset %d:\n%s", w, at, s)
				}
				at += i + len(w)
			}
			for _, w := range tc.wantNone {
				if strings.Contains(s, w) {
					t.Errorf("output holds %q:\n%s", w, s)
				}
			}
		})
	}
}

func TestGoStreamPassesNonEventLines(t *testing.T) {
	in := "# pkg\nvet: something\n" + `{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}` + "\n" + `{"Action":"pass","Package":"p"}` + "\n"
	var out strings.Builder
	res, err := goStream(strings.NewReader(in), &out, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed || res.Events != 2 || out.String() != "# pkg\nvet: something\nok  \tp\t0.1s\n" {
		t.Errorf("%+v %q", res, out.String())
	}
}

// A test binary that dies (a panic, a race with halt_on_error, a timeout)
// ends no test: what the unfinished test printed is shown with the failure.
func TestGoStreamCrash(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"WARNING: DATA RACE\n"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\tp\t1.0s\n"}`,
		`{"Action":"fail","Package":"p"}`,
	}, "\n")
	var out strings.Builder
	res, _ := goStream(strings.NewReader(in), &out, false)
	if !res.Failed || out.String() != "WARNING: DATA RACE\nFAIL\tp\t1.0s\n" {
		t.Errorf("%+v %q", res, out.String())
	}
}

func TestBuildFailureFails(t *testing.T) {
	in := `{"ImportPath":"p [p.test]","Action":"build-output","Output":"x.go:1: undefined: y\n"}` + "\n" + `{"ImportPath":"p [p.test]","Action":"build-fail"}` + "\n"
	var out strings.Builder
	res, _ := goStream(strings.NewReader(in), &out, false)
	if !res.Failed || !strings.Contains(out.String(), "undefined: y") {
		t.Errorf("%+v %q", res, out.String())
	}
}

// testdata/pytest.xml is a real pytest --junitxml report: a module skipped
// at collection (importorskip), a skip, a skipped parameter, an xfail.
func TestJunitSkips(t *testing.T) {
	f, err := os.Open("testdata/pytest.xml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	skips, n, err := junitSkips(f)
	if err != nil {
		t.Fatal(err)
	}
	var got []skipKey
	for _, s := range skips {
		got = append(got, s.Key)
	}
	want := []skipKey{{"-", "tests.test_b"}, {"tests.test_a", "test_skip"}, {"tests.test_a", "test_param[2]"}, {"tests.test_a", "test_xf"}}
	if n != 6 || !slices.Equal(got, want) {
		t.Errorf("%d cases, skips %v; want 6, %v", n, got, want)
	}
	if !strings.Contains(skips[0].Reason, "could not import") {
		t.Errorf("collection skip's reason %q", skips[0].Reason)
	}
}

func TestReport(t *testing.T) {
	al := allowlist{{"p", "TestArm"}: "arm64 only"}
	tests := map[string]struct {
		skips []skip
		ok    bool
	}{
		"none":                     {ok: true},
		"allowed":                  {skips: []skip{{Key: skipKey{"p", "TestArm"}}}, ok: true},
		"not allowed":              {skips: []skip{{Key: skipKey{"p", "TestArm"}}, {Key: skipKey{"p", "TestKube"}, Reason: "SANDPOD_KUBE_BIN is not set"}}},
		"same name, other package": {skips: []skip{{Key: skipKey{"q", "TestArm"}}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out strings.Builder
			if ok := report(&out, "go test", tc.skips, al, "allow"); ok != tc.ok {
				t.Errorf("ok %v, want %v:\n%s", ok, tc.ok, out.String())
			}
			if !tc.ok && !strings.Contains(out.String(), "FAIL") {
				t.Errorf("no FAIL line:\n%s", out.String())
			}
		})
	}
}
