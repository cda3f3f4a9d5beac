package mcp

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

var pngHeader = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

func TestCodeResultBounds(t *testing.T) {
	png := func(n int) map[string][]byte {
		return map[string][]byte{"image/png": append(append([]byte{}, pngHeader...), make([]byte, n)...), "text/plain": []byte("<Figure>")}
	}
	cases := map[string]struct {
		ex                   sandpod.Execution
		wantImages, wantLeft int
		check                func(t *testing.T, out runCodeResult)
	}{
		"value and a figure": {
			ex: sandpod.Execution{Results: []sandpod.CodeResult{
				{Data: png(10)}, {Data: map[string][]byte{"text/plain": []byte("10")}, IsMainResult: true},
			}},
			wantImages: 1,
			check: func(t *testing.T, out runCodeResult) {
				if out.Results[0].Image != 1 || out.Results[1].Text != "10" || !out.Results[1].Main {
					t.Errorf("results %+v", out.Results)
				}
			},
		},
		"too many figures": {
			ex: sandpod.Execution{Results: func() (rs []sandpod.CodeResult) {
				for range MaxImages + 2 {
					rs = append(rs, sandpod.CodeResult{Data: png(1)})
				}
				return rs
			}()},
			wantImages: MaxImages, wantLeft: 2,
		},
		"a figure over the size bound": {
			ex:         sandpod.Execution{Results: []sandpod.CodeResult{{Data: png(MaxImageBytes)}}},
			wantImages: 0, wantLeft: 1,
		},
		"long output and an exception": {
			ex: sandpod.Execution{Stdout: strings.Repeat("x", MaxStreamBytes+1), Stderr: "warn\n",
				Error: &sandpod.ExecutionError{Name: "ValueError", Value: "bad", Traceback: "Traceback ...\nValueError: bad"}},
			check: func(t *testing.T, out runCodeResult) {
				if !out.StdoutTruncated || out.StderrTruncated || len(out.Stdout) > MaxStreamBytes+200 {
					t.Errorf("stdout truncated %v (%d bytes), stderr truncated %v", out.StdoutTruncated, len(out.Stdout), out.StderrTruncated)
				}
				if out.Error == nil || out.Error.Name != "ValueError" || !strings.Contains(out.Error.Traceback, "ValueError: bad") {
					t.Errorf("error %+v", out.Error)
				}
			},
		},
		"the server cut the output": {
			ex: sandpod.Execution{Stdout: "start", StdoutTruncated: true},
			check: func(t *testing.T, out runCodeResult) {
				if !out.StdoutTruncated {
					t.Error("the server's cut is not reported")
				}
			},
		},
		"a long value": {
			ex: sandpod.Execution{Results: []sandpod.CodeResult{{Data: map[string][]byte{"text/plain": bytes.Repeat([]byte("1"), MaxResultText+1)}, IsMainResult: true}}},
			check: func(t *testing.T, out runCodeResult) {
				if !out.Results[0].TextTruncated {
					t.Error("a value over MaxResultText is not reported cut")
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, images := codeResult("sb", &tc.ex)
			if out.Sandbox != "sb" {
				t.Errorf("sandbox %q", out.Sandbox)
			}
			if len(images) != tc.wantImages || out.ImagesLeftOut != tc.wantLeft {
				t.Errorf("%d images, %d left out; want %d, %d", len(images), out.ImagesLeftOut, tc.wantImages, tc.wantLeft)
			}
			if tc.check != nil {
				tc.check(t, out)
			}
		})
	}
}

func TestDecodeContent(t *testing.T) {
	cases := map[string]struct {
		content, encoding string
		want              []byte
		wantErr           string
	}{
		"text":           {content: "héllo", want: []byte("héllo")},
		"text named":     {content: "a", encoding: "utf-8", want: []byte("a")},
		"base64":         {content: base64.StdEncoding.EncodeToString([]byte{0, 1, 255}), encoding: "base64", want: []byte{0, 1, 255}},
		"not base64":     {content: "%%%", encoding: "base64", wantErr: "not base64"},
		"other encoding": {content: "a", encoding: "latin1", wantErr: `encoding "latin1": use utf-8 or base64`},
		"over the bound": {content: strings.Repeat("a", MaxWriteBytes+1), wantErr: "over the 8 MiB"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := decodeContent(tc.content, tc.encoding)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tc.want) {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestFileContent(t *testing.T) {
	png := append(append([]byte{}, pngHeader...), 0, 0, 0, 1)
	cases := map[string]struct {
		data                []byte
		whole               bool
		wantImage           string
		wantEncoding, wantC string
	}{
		"text":                        {data: []byte("a,b\n"), whole: true, wantEncoding: "utf-8", wantC: "a,b\n"},
		"bytes":                       {data: []byte{0xff, 0}, whole: true, wantEncoding: "base64", wantC: "/wA="},
		"a png":                       {data: png, whole: true, wantImage: "image/png", wantEncoding: "base64", wantC: base64.StdEncoding.EncodeToString(png)},
		"a piece of a png":            {data: png, whole: false, wantEncoding: "base64", wantC: base64.StdEncoding.EncodeToString(png)},
		"empty":                       {data: nil, whole: true, wantEncoding: "utf-8", wantC: ""},
		"text cut inside a character": {data: []byte("h\xc3"), whole: false, wantEncoding: "base64", wantC: "aMM="},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			im, text := fileContent(tc.data, tc.whole)
			gotImage := ""
			if im != nil {
				gotImage = im.MIMEType
			}
			if gotImage != tc.wantImage || text.encoding != tc.wantEncoding || text.content != tc.wantC {
				t.Errorf("image %q, %s %q; want image %q, %s %q", gotImage, text.encoding, text.content, tc.wantImage, tc.wantEncoding, tc.wantC)
			}
		})
	}
}
