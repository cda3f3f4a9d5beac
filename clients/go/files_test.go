package sandpod

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
)

func TestFilesRoundTripAndResume(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	files := c.Sandbox("python-1").Files()
	ctx := context.Background()
	data := bytes.Repeat([]byte("0123456789"), 2345)
	info, err := files.WriteFile(ctx, "a/b.txt", data, WithParents())
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != int64(len(data)) || info.Path != "a/b.txt" || info.Mode != 0o644 {
		t.Errorf("info = %+v", info)
	}
	// The connection breaks after 5000 bytes; the reader continues at the
	// offset it reached.
	f.readBreakAt = 5000
	got, err := files.ReadFile(ctx, "a/b.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, want %d (equal=%v)", len(got), len(data), bytes.Equal(got, data))
	}
	if n := f.count("read"); n != 2 {
		t.Errorf("read calls = %d, want 2", n)
	}
	if _, err := files.ReadFile(ctx, "missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing: %v", err)
	}
}

type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n > 0 {
		r.n--
		return copy(p, "data"), nil
	}
	return 0, errors.New("disk on fire")
}

func TestWriteAbortsOnReaderError(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	_, err := c.Sandbox("python-1").Files().Write(context.Background(), "x", &failingReader{n: 3})
	if err == nil || err.Error() != "disk on fire" {
		t.Fatalf("err = %v", err)
	}
	f.mu.Lock()
	_, written := f.files["x"]
	f.mu.Unlock()
	if written {
		t.Errorf("a failed write left a file")
	}
}

func TestFileWriterStreams(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	w, err := c.Sandbox("python-1").Files().Create(context.Background(), "big")
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte{7}, writeChunk+1)
	for range 3 {
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Info().Size != int64(3*len(chunk)) {
		t.Errorf("size = %d", w.Info().Size)
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("write after close: %v", err)
	}
}

// List follows the pages; Entries stops fetching when the caller stops.
func TestListFollowsPages(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	files := c.Sandbox("python-1").Files()
	entries, err := files.List(context.Background(), "d")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2500 || entries[0].Name != "f0000" || entries[2499].Name != "f2499" {
		t.Fatalf("listed %d entries, want f0000..f2499", len(entries))
	}
	if n := f.count("list files"); n != 3 {
		t.Errorf("pages fetched = %d, want 3", n)
	}
	seen := 0
	for _, err := range files.Entries(context.Background(), "d") {
		if err != nil {
			t.Fatal(err)
		}
		if seen++; seen == 10 {
			break
		}
	}
	if n := f.count("list files"); n != 4 {
		t.Errorf("pages fetched after stopping early = %d, want 1", n-3)
	}
}

// ReadFile holds the file in memory: past WithMaxSize (DefaultReadMax)
// it fails with ErrResourceExhausted instead of reading on.
func TestReadFileIsBounded(t *testing.T) {
	f := newFakeServer()
	c := startFake(t, f)
	files := c.Sandbox("python-1").Files()
	ctx := context.Background()
	data := bytes.Repeat([]byte("x"), 5000)
	if _, err := files.WriteFile(ctx, "big", data); err != nil {
		t.Fatal(err)
	}
	if _, err := files.ReadFile(ctx, "big", WithMaxSize(4999)); !errors.Is(err, ErrResourceExhausted) {
		t.Errorf("over the bound: %v, want ErrResourceExhausted", err)
	}
	for _, o := range []FileOption{WithMaxSize(5000), WithMaxSize(-1), WithMaxSize(0)} {
		if got, err := files.ReadFile(ctx, "big", o); err != nil || len(got) != 5000 {
			t.Errorf("within the bound: %d bytes, %v", len(got), err)
		}
	}
	if got, err := files.ReadFile(ctx, "big", WithRange(0, 100), WithMaxSize(1000)); err != nil || len(got) != 100 {
		t.Errorf("a range within the bound: %d bytes, %v", len(got), err)
	}
}
