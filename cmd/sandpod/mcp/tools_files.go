package mcp

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

type readFileArgs struct {
	Path     string `json:"path" jsonschema:"Path of the file in the sandbox (relative paths start at the sandbox's working directory)."`
	Offset   int64  `json:"offset,omitempty" jsonschema:"Byte offset to start reading at, to read a large file in pieces."`
	MaxBytes int    `json:"max_bytes,omitempty" jsonschema:"Most bytes to return."`
	Sandbox  string `json:"sandbox,omitempty"`
}

type readFileResult struct {
	Sandbox   string `json:"sandbox"`
	Path      string `json:"path"`
	Size      int64  `json:"size" jsonschema:"The file's whole size in bytes."`
	Offset    int64  `json:"offset"`
	Length    int    `json:"length" jsonschema:"Bytes returned, from offset."`
	Truncated bool   `json:"truncated" jsonschema:"The file goes on past what was returned: read on with offset = offset + length."`
	Encoding  string `json:"encoding" jsonschema:"utf-8 when content is the text itself, base64 when the bytes are not UTF-8 text."`
	Content   string `json:"content"`
	Image     bool   `json:"image,omitempty" jsonschema:"The bytes are an image, also returned as image content."`
}

func (s *Server) addReadFile() {
	addTool(s, &sdk.Tool{
		Name: "read_file",
		Description: fmt.Sprintf("Read a file from a sandbox: UTF-8 text as is, anything else base64-encoded; a whole PNG, JPEG, GIF or WebP file also comes back as an image. "+
			"At most %d KiB per call: the result says when the file goes on, and offset reads the rest.", MaxReadBytes>>10),
		InputSchema: inputSchema[readFileArgs](map[string]bound{
			"offset":    {min: 0, max: 1 << 53},
			"max_bytes": {min: 1, max: MaxReadBytes, def: MaxReadBytes},
		}, nil),
		Annotations: readOnly,
	}, s.readFileTool)
}

func (s *Server) readFileTool(ctx context.Context, req *sdk.CallToolRequest, in readFileArgs) (*sdk.CallToolResult, readFileResult, error) {
	if in.Path == "" {
		return nil, readFileResult{}, errors.New("path: give the file to read")
	}
	limit := in.MaxBytes
	if limit <= 0 || limit > MaxReadBytes {
		limit = MaxReadBytes
	}
	sb, sess, err := s.sandbox(ctx, req, in.Sandbox)
	if err != nil {
		return nil, readFileResult{}, err
	}
	files := sb.Files()
	st, err := files.Stat(ctx, in.Path)
	if err != nil {
		return nil, readFileResult{}, sandboxError(sess, sb.Name(), err)
	}
	if st.IsDir {
		return nil, readFileResult{}, fmt.Errorf("sandbox %s: %s is a directory (list_files lists it)", sb.Name(), in.Path)
	}
	out := readFileResult{Sandbox: sb.Name(), Path: in.Path, Size: st.Size, Offset: in.Offset}
	var data []byte
	if in.Offset < st.Size {
		// One byte more than returned says whether the file goes on, also
		// when it grew since the stat.
		data, err = files.ReadFile(ctx, in.Path, sandpod.WithRange(in.Offset, int64(limit)+1))
		if err != nil {
			return nil, readFileResult{}, sandboxError(sess, sb.Name(), err)
		}
	}
	if len(data) > limit {
		data, out.Truncated = data[:limit], true
	}
	out.Length = len(data)
	res, text := fileContent(data, in.Offset == 0 && !out.Truncated)
	out.Encoding, out.Content, out.Image = text.encoding, text.content, res != nil
	if res == nil {
		return nil, out, nil
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(mustJSON(out))}, res}}, out, nil
}

type encoded struct{ encoding, content string }

// fileContent is data as text (UTF-8 as is, else base64), and as an
// image when whole is set and it is one.
func fileContent(data []byte, whole bool) (*sdk.ImageContent, encoded) {
	var image *sdk.ImageContent
	if whole && len(data) > 0 {
		switch mime := http.DetectContentType(data); mime {
		case "image/png", "image/jpeg", "image/gif", "image/webp":
			image = &sdk.ImageContent{Data: data, MIMEType: mime}
		}
	}
	if image == nil && utf8.Valid(data) {
		return nil, encoded{"utf-8", string(data)}
	}
	return image, encoded{"base64", base64.StdEncoding.EncodeToString(data)}
}

type writeFileArgs struct {
	Path     string `json:"path" jsonschema:"Path of the file in the sandbox; missing parent directories are made."`
	Content  string `json:"content" jsonschema:"The file's new content (it replaces the file)."`
	Encoding string `json:"encoding,omitempty" jsonschema:"utf-8: content is the text itself; base64: content is base64-encoded bytes."`
	Sandbox  string `json:"sandbox,omitempty"`
}

type writeFileResult struct {
	Sandbox string `json:"sandbox"`
	Path    string `json:"path"`
	Size    int64  `json:"size" jsonschema:"Bytes written."`
}

func (s *Server) addWriteFile() {
	addTool(s, &sdk.Tool{
		Name:        "write_file",
		Description: fmt.Sprintf("Write a file in a sandbox, replacing it, and make its missing parent directories. Text as is, or bytes base64-encoded (encoding). At most %d MiB.", MaxWriteBytes>>20),
		InputSchema: inputSchema[writeFileArgs](nil, map[string][]any{"encoding": {"utf-8", "base64"}}),
		Annotations: destructive,
	}, s.writeFileTool)
}

// decodeContent is what write_file writes, within the bound.
func decodeContent(content, encoding string) ([]byte, error) {
	var data []byte
	switch encoding {
	case "", "utf-8":
		data = []byte(content)
	case "base64":
		var err error
		if data, err = base64.StdEncoding.DecodeString(content); err != nil {
			return nil, fmt.Errorf("content: not base64 (%v); use encoding utf-8 for text", err)
		}
	default:
		return nil, fmt.Errorf("encoding %q: use utf-8 or base64", encoding)
	}
	if len(data) > MaxWriteBytes {
		return nil, fmt.Errorf("content: %d bytes is over the %d MiB a write may hold; write the file in a command (run_command) instead", len(data), MaxWriteBytes>>20)
	}
	return data, nil
}

func (s *Server) writeFileTool(ctx context.Context, req *sdk.CallToolRequest, in writeFileArgs) (*sdk.CallToolResult, writeFileResult, error) {
	if in.Path == "" {
		return nil, writeFileResult{}, errors.New("path: give the file to write")
	}
	data, err := decodeContent(in.Content, in.Encoding)
	if err != nil {
		return nil, writeFileResult{}, err
	}
	sb, sess, err := s.sandbox(ctx, req, in.Sandbox)
	if err != nil {
		return nil, writeFileResult{}, err
	}
	fi, err := sb.Files().WriteFile(ctx, in.Path, data, sandpod.WithParents())
	if err != nil {
		return nil, writeFileResult{}, sandboxError(sess, sb.Name(), err)
	}
	return nil, writeFileResult{Sandbox: sb.Name(), Path: in.Path, Size: fi.Size}, nil
}

type listFilesArgs struct {
	Path    string `json:"path,omitempty" jsonschema:"Directory to list (default: the sandbox's working directory)."`
	Sandbox string `json:"sandbox,omitempty"`
}

type fileEntry struct {
	Name     string `json:"name"`
	Type     string `json:"type" jsonschema:"file, directory or symlink"`
	Size     int64  `json:"size"`
	Mode     string `json:"mode" jsonschema:"Permission bits, octal."`
	Modified string `json:"modified,omitempty"`
}

type listFilesResult struct {
	Sandbox   string      `json:"sandbox"`
	Path      string      `json:"path"`
	Entries   []fileEntry `json:"entries" jsonschema:"Sorted by name."`
	Truncated bool        `json:"truncated" jsonschema:"The directory holds more entries than returned."`
}

func (s *Server) addListFiles() {
	addTool(s, &sdk.Tool{
		Name:        "list_files",
		Description: fmt.Sprintf("List a directory of a sandbox: name, type, size, mode and modification time of each entry, sorted by name (at most %d entries).", MaxListEntries),
		InputSchema: inputSchema[listFilesArgs](nil, nil),
		Annotations: readOnly,
	}, s.listFilesTool)
}

func (s *Server) listFilesTool(ctx context.Context, req *sdk.CallToolRequest, in listFilesArgs) (*sdk.CallToolResult, listFilesResult, error) {
	dir := in.Path
	if dir == "" {
		dir = "."
	}
	sb, sess, err := s.sandbox(ctx, req, in.Sandbox)
	if err != nil {
		return nil, listFilesResult{}, err
	}
	out := listFilesResult{Sandbox: sb.Name(), Path: dir, Entries: []fileEntry{}}
	for fi, err := range sb.Files().Entries(ctx, dir) {
		if err != nil {
			return nil, listFilesResult{}, sandboxError(sess, sb.Name(), err)
		}
		if len(out.Entries) == MaxListEntries {
			out.Truncated = true
			break
		}
		out.Entries = append(out.Entries, fileEntryOf(fi))
	}
	return nil, out, nil
}

func fileEntryOf(fi sandpod.FileInfo) fileEntry {
	e := fileEntry{Name: fi.Name, Type: "file", Size: fi.Size, Mode: fmt.Sprintf("%04o", fi.Mode&fs.ModePerm)}
	switch {
	case fi.IsDir:
		e.Type = "directory"
	case fi.IsSymlink:
		e.Type = "symlink"
	}
	if !fi.ModTime.IsZero() {
		e.Modified = fi.ModTime.UTC().Format(time.RFC3339)
	}
	return e
}
