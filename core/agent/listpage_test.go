package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

func newTestServer(t *testing.T) *Server {
	t.Helper()
	srv, err := New(Config{Sandbox: "sb", Root: t.TempDir(), Secret: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// listAll pages through dir and returns the names in order and the number
// of pages.
func listAll(t *testing.T, srv *Server, dir string, size int32) ([]string, int) {
	t.Helper()
	var names []string
	token, pages := "", 0
	for {
		resp, err := srv.ListFiles(context.Background(), &sandpodv1.ListFilesRequest{Path: dir, PageSize: size, PageToken: token})
		if err != nil {
			t.Fatalf("page %d: %v", pages+1, err)
		}
		pages++
		for _, f := range resp.GetFiles() {
			names = append(names, f.GetName())
		}
		if token = resp.GetNextPageToken(); token == "" {
			return names, pages
		}
	}
}

func TestListFilesPagesInNameOrder(t *testing.T) {
	srv := newTestServer(t)
	dir := filepath.Join(srv.cfg.Root, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 2500
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d", (i*7919)%n)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	names, pages := listAll(t, srv, "d/", 0)
	if len(names) != n || pages != 3 {
		t.Fatalf("default page size: %d names in %d pages, want %d in 3", len(names), pages, n)
	}
	for i, name := range names {
		if name != fmt.Sprintf("f%05d", i) {
			t.Fatalf("entry %d is %q: not sorted, or repeated or skipped", i, name)
		}
	}
	if _, pages := listAll(t, srv, "d", MaxListPageSize); pages != 1 {
		t.Errorf("page_size %d: %d pages, want 1", MaxListPageSize, pages)
	}

	// Entries made or removed between pages shift nothing.
	first, err := srv.ListFiles(context.Background(), &sandpodv1.ListFilesRequest{Path: "d", PageSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(filepath.Join(dir, "f00003"))
	_ = os.WriteFile(filepath.Join(dir, "a-new-one"), nil, 0o644)
	next, err := srv.ListFiles(context.Background(), &sandpodv1.ListFilesRequest{Path: "d", PageSize: 2, PageToken: first.GetNextPageToken()})
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{next.GetFiles()[0].GetName(), next.GetFiles()[1].GetName()}; got[0] != "f00010" || got[1] != "f00011" {
		t.Errorf("the page after f00009 starts %v, want [f00010 f00011]", got)
	}
	if next.GetFiles()[0].GetPath() != "d/f00010" {
		t.Errorf("path = %q, want d/f00010", next.GetFiles()[0].GetPath())
	}
}

// Long names make a page end before page_size, under the byte budget.
func TestListFilesPageStaysUnderItsByteBudget(t *testing.T) {
	srv := newTestServer(t)
	deep := strings.Repeat("d", 200) + "/" + strings.Repeat("e", 200)
	dir := filepath.Join(srv.cfg.Root, deep)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 6000
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%0250d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := srv.ListFiles(context.Background(), &sandpodv1.ListFilesRequest{Path: deep, PageSize: MaxListPageSize})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(resp.GetFiles()); got == 0 || got >= n || resp.GetNextPageToken() == "" {
		t.Fatalf("first page: %d entries, next token %q; want fewer than %d and a token", got, resp.GetNextPageToken(), n)
	}
	if size := len(mustMarshal(t, resp)); size > listPageBytes+1024 {
		t.Errorf("page is %d bytes, over the budget of %d", size, listPageBytes)
	}
	if names, _ := listAll(t, srv, deep, MaxListPageSize); len(names) != n {
		t.Errorf("listed %d entries, want %d", len(names), n)
	}
}

func TestListFilesRefusesBadPaging(t *testing.T) {
	srv := newTestServer(t)
	for _, d := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(srv.cfg.Root, d, "x"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(srv.cfg.Root, d, "y"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	first, err := srv.ListFiles(context.Background(), &sandpodv1.ListFilesRequest{Path: "a", PageSize: 1})
	if err != nil || first.GetNextPageToken() == "" {
		t.Fatalf("first page: %v %v", first, err)
	}
	tok := first.GetNextPageToken()
	for name, req := range map[string]*sandpodv1.ListFilesRequest{
		"negative page size":    {Path: "a", PageSize: -1},
		"page size over max":    {Path: "a", PageSize: MaxListPageSize + 1},
		"garbage token":         {Path: "a", PageToken: "%%%"},
		"short token":           {Path: "a", PageToken: "AAAA"},
		"token of another path": {Path: "b", PageToken: tok},
		"altered token":         {Path: "a", PageToken: tok[:len(tok)-2] + "AA"},
	} {
		_, err := srv.ListFiles(context.Background(), req)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "list_files: page_") {
			t.Errorf("%s: %v, want INVALID_ARGUMENT about the page", name, err)
		}
	}
	// The same directory under another spelling (here its absolute path)
	// takes the token.
	abs := filepath.Join(srv.cfg.Root, "a") + "/"
	if _, err := srv.ListFiles(context.Background(), &sandpodv1.ListFilesRequest{Path: abs, PageToken: tok}); err != nil {
		t.Errorf("token with %s: %v", abs, err)
	}
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
