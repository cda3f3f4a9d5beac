package agent

import (
	"bytes"
	"strings"
	"testing"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

func TestMarkerScannerAcrossReads(t *testing.T) {
	const marker = "<END>"
	tests := []struct {
		name   string
		chunks []string
		want   string // output before the marker
		found  bool
		rest   string
	}{
		{"whole", []string{"abc<END>"}, "abc", true, ""},
		{"split in two", []string{"abc<EN", "D>"}, "abc", true, ""},
		{"split byte by byte", []string{"a", "<", "E", "N", "D", ">"}, "a", true, ""},
		{"false start", []string{"a<E", "X<END>"}, "a<EX", true, ""},
		{"after the marker", []string{"a<END>late"}, "a", true, "late"},
		{"none", []string{"a<E", "ND"}, "a", false, ""},
		{"repeated prefix", []string{"<<", "END>"}, "<", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := markerScanner{marker: []byte(marker)}
			var out bytes.Buffer
			found := false
			var rest []byte
			for _, ch := range tt.chunks {
				o, f, r := sc.feed([]byte(ch))
				out.Write(o)
				if f {
					found, rest = true, r
					break
				}
			}
			if out.String() != tt.want || found != tt.found || string(rest) != tt.rest {
				t.Errorf("got %q found=%v rest=%q; want %q %v %q", out.String(), found, rest, tt.want, tt.found, tt.rest)
			}
			if !found && out.String()+string(sc.flush()) != strings.Join(tt.chunks, "") {
				t.Errorf("held-back bytes lost")
			}
		})
	}
}

func TestFrameRoundTripAndLimit(t *testing.T) {
	var buf bytes.Buffer
	if err := writeFrame(&buf, map[string]any{"t": "done", "count": 3, "marked": []int{1, 2}}); err != nil {
		t.Fatal(err)
	}
	f, err := readFrame(bytes.NewReader(buf.Bytes()), 1<<10)
	if err != nil || f.T != "done" || f.Count != 3 || len(f.Marked) != 2 {
		t.Fatalf("round trip: %+v, %v", f, err)
	}
	if _, err := readFrame(bytes.NewReader(buf.Bytes()), 8); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Fatalf("a frame over the limit: %v", err)
	}
	if _, err := readFrame(bytes.NewReader([]byte{0, 0, 0, 2, '{', 'x'}), 8); err == nil {
		t.Fatal("garbage frame accepted")
	}
}

func TestCodeResultDecodesAndBounds(t *testing.T) {
	tests := []struct {
		name      string
		frame     execFrame
		limit     int
		wantKeys  []string
		truncated bool
	}{
		{"png decoded", execFrame{Data: map[string]string{"image/png": "iVBORw==", "text/plain": "fig"}, B64: []string{"image/png"}}, 100, []string{"image/png", "text/plain"}, false},
		{"bad base64 dropped", execFrame{Data: map[string]string{"image/png": "!!", "text/plain": "x"}, B64: []string{"image/png"}}, 100, []string{"text/plain"}, true},
		{"largest dropped first, text/plain kept", execFrame{Data: map[string]string{"text/html": strings.Repeat("h", 80), "text/markdown": strings.Repeat("m", 20), "text/plain": strings.Repeat("p", 50)}}, 100, []string{"text/markdown", "text/plain"}, true},
		{"text/plain dropped last", execFrame{Data: map[string]string{"text/plain": strings.Repeat("p", 200)}}, 100, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := codeResult(&tt.frame, tt.limit)
			var keys []string
			for _, k := range []string{"image/png", "text/html", "text/markdown", "text/plain"} {
				if _, ok := r.Data[k]; ok {
					keys = append(keys, k)
				}
			}
			if strings.Join(keys, ",") != strings.Join(tt.wantKeys, ",") || r.Truncated != tt.truncated {
				t.Errorf("keys %v truncated=%v; want %v %v", keys, r.Truncated, tt.wantKeys, tt.truncated)
			}
		})
	}
	r := codeResult(&execFrame{Data: map[string]string{"image/png": "iVBORw=="}, B64: []string{"image/png"}}, 100)
	if !bytes.Equal(r.Data["image/png"], []byte{0x89, 'P', 'N', 'G'}) {
		t.Errorf("png bytes: %x", r.Data["image/png"])
	}
	_ = sandpodv1.CodeResult{}
}

func TestCheckContextIDAndLanguage(t *testing.T) {
	for id, ok := range map[string]bool{"": true, "default": true, "a": true, "ctx-1a2b": true, "A": false, "-a": false, "a-": false, "a_b": false, strings.Repeat("a", 64): false, strings.Repeat("a", 63): true} {
		if err := CheckContextID(id); (err == nil) != ok {
			t.Errorf("CheckContextID(%q) = %v", id, err)
		}
	}
	for lang, ok := range map[string]bool{"": true, "python": true, "Python": false, "r": false, "javascript": false} {
		if err := CheckLanguage(lang); (err == nil) != ok {
			t.Errorf("CheckLanguage(%q) = %v", lang, err)
		}
	}
}
