package sandpod

import (
	"context"
	"iter"

	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// List returns the entries of a directory, sorted by name: all of them,
// page by page (see Entries to go through a large directory without
// holding it all).
func (f *Files) List(ctx context.Context, dir string) ([]FileInfo, error) {
	var out []FileInfo
	for fi, err := range f.Entries(ctx, dir) {
		if err != nil {
			return nil, err
		}
		out = append(out, fi)
	}
	return out, nil
}

// Entries iterates over the entries of a directory, sorted by name,
// fetching a page at a time (each page is retried on its own). An error
// ends the iteration after being yielded once:
//
//	for fi, err := range sb.Files().Entries(ctx, "data") {
//		if err != nil { return err }
//		fmt.Println(fi.Name, fi.Size)
//	}
func (f *Files) Entries(ctx context.Context, dir string) iter.Seq2[FileInfo, error] {
	return func(yield func(FileInfo, error) bool) {
		token := ""
		for {
			page, next, err := f.listPage(ctx, dir, token)
			if err != nil {
				yield(FileInfo{}, err)
				return
			}
			for _, fi := range page {
				if !yield(fi, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			token = next
		}
	}
}

// listPage fetches the page of dir that token starts (the server's
// default page size).
func (f *Files) listPage(ctx context.Context, dir, token string) ([]FileInfo, string, error) {
	s := f.s
	var resp *pb.ListFilesResponse
	err := s.c.retry(ctx, "files.list", func(ctx context.Context, _ int) (err error) {
		resp, err = s.c.rpc.ListFiles(ctx, &pb.ListFilesRequest{Sandbox: s.name, Namespace: s.ns, Path: dir, PageToken: token})
		return err
	})
	if err := s.observe(ctx, err); err != nil {
		return nil, "", err
	}
	out := make([]FileInfo, 0, len(resp.GetFiles()))
	for _, fi := range resp.GetFiles() {
		out = append(out, fileInfoFromProto(fi))
	}
	return out, resp.GetNextPageToken(), nil
}
