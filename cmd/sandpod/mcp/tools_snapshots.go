package mcp

import (
	"context"
	"errors"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

type snapshotArgs struct {
	Name    string `json:"name,omitempty" jsonschema:"Name of the new snapshot (default: generated from the sandbox's name)."`
	Sandbox string `json:"sandbox,omitempty"`
}

type snapshotResult struct {
	Sandbox   string `json:"sandbox"`
	Snapshot  string `json:"snapshot" jsonschema:"The snapshot's name, for restore_sandbox and fork_sandbox."`
	SizeBytes int64  `json:"size_bytes"`
	FileCount int64  `json:"file_count"`
	Memory    bool   `json:"memory" jsonschema:"Running processes' memory is saved too (false: files only)."`
}

func (s *Server) addSnapshot() {
	addTool(s, &sdk.Tool{
		Name: "snapshot_sandbox",
		Description: "Save a sandbox's files as a named snapshot, to go back to later (restore_sandbox) or to start copies from (fork_sandbox). " +
			"The sandbox keeps running. Snapshots outlive the session.",
		InputSchema: inputSchema[snapshotArgs](nil, nil),
		Annotations: additive,
	}, s.snapshotTool)
}

func (s *Server) snapshotTool(ctx context.Context, req *sdk.CallToolRequest, in snapshotArgs) (*sdk.CallToolResult, snapshotResult, error) {
	sb, sess, err := s.sandbox(ctx, req, in.Sandbox)
	if err != nil {
		return nil, snapshotResult{}, err
	}
	var opts []sandpod.SandboxOption
	if in.Name != "" {
		opts = append(opts, sandpod.WithName(in.Name))
	}
	snap, err := sb.Snapshot(ctx, opts...)
	if err != nil {
		return nil, snapshotResult{}, sandboxError(sess, sb.Name(), err)
	}
	info := snap.Info()
	return nil, snapshotResult{Sandbox: sb.Name(), Snapshot: snap.Name(), SizeBytes: info.SizeBytes, FileCount: info.FileCount, Memory: info.Memory}, nil
}

type restoreArgs struct {
	Snapshot string `json:"snapshot" jsonschema:"The snapshot to put back."`
	Sandbox  string `json:"sandbox,omitempty"`
}

type restoreResult struct {
	Sandbox  string `json:"sandbox"`
	Snapshot string `json:"snapshot"`
	Phase    string `json:"phase"`
}

func (s *Server) addRestore() {
	addTool(s, &sdk.Tool{
		Name: "restore_sandbox",
		Description: "Put a sandbox's files back to a snapshot, keeping its name. Its running processes are stopped and it starts again " +
			"on the restored files (code contexts start empty).",
		InputSchema: inputSchema[restoreArgs](nil, nil),
		Annotations: destructive,
	}, s.restoreTool)
}

func (s *Server) restoreTool(ctx context.Context, req *sdk.CallToolRequest, in restoreArgs) (*sdk.CallToolResult, restoreResult, error) {
	if in.Snapshot == "" {
		return nil, restoreResult{}, errors.New("snapshot: name the snapshot to restore (snapshot_sandbox makes one)")
	}
	sb, sess, err := s.sandbox(ctx, req, in.Sandbox)
	if err != nil {
		return nil, restoreResult{}, err
	}
	if err := sb.Restore(ctx, s.client.SnapshotNamed(in.Snapshot)); err != nil {
		return nil, restoreResult{}, sandboxError(sess, sb.Name(), err)
	}
	return nil, restoreResult{Sandbox: sb.Name(), Snapshot: in.Snapshot, Phase: string(sb.Info().Phase)}, nil
}

type forkArgs struct {
	Count    int    `json:"count,omitempty" jsonschema:"How many copies to make."`
	Snapshot string `json:"snapshot,omitempty" jsonschema:"Fork from this snapshot instead of from a sandbox."`
	Keep     bool   `json:"keep,omitempty" jsonschema:"Keep the copies when this session ends (they then live until their TTL or delete_sandbox). By default they are deleted with the session."`
	Sandbox  string `json:"sandbox,omitempty"`
}

type forkResult struct {
	Sandbox  string   `json:"sandbox,omitempty" jsonschema:"The sandbox forked from (absent for a fork from a snapshot)."`
	Snapshot string   `json:"snapshot" jsonschema:"The snapshot the copies start from (a fork from a sandbox takes one first)."`
	Forks    []string `json:"forks" jsonschema:"The new sandboxes; name one in the sandbox argument of other tools."`
	EndsWith string   `json:"ends_with"`
}

// maxForks bounds one fork_sandbox call.
const maxForks = 8

func (s *Server) addFork() {
	addTool(s, &sdk.Tool{
		Name: "fork_sandbox",
		Description: fmt.Sprintf("Make copies of a sandbox's files (or of a snapshot's) as new running sandboxes (1 to %d), to try things in parallel. "+
			"This session's sandbox stays its default; name a copy in the sandbox argument of other tools.", maxForks),
		InputSchema: inputSchema[forkArgs](map[string]bound{"count": {min: 1, max: maxForks, def: 1}}, nil),
		Annotations: additive,
	}, s.forkTool)
}

func (s *Server) forkTool(ctx context.Context, req *sdk.CallToolRequest, in forkArgs) (*sdk.CallToolResult, forkResult, error) {
	n := in.Count
	if n == 0 {
		n = 1
	}
	if n < 1 || n > maxForks {
		return nil, forkResult{}, fmt.Errorf("count: must be 1..%d, got %d", maxForks, in.Count)
	}
	if in.Snapshot != "" && in.Sandbox != "" {
		return nil, forkResult{}, errors.New("name a snapshot or a sandbox to fork from, not both")
	}
	sess, err := s.sessions.get(req.Session)
	if err != nil {
		return nil, forkResult{}, err
	}
	var (
		from   sandpod.ForkSource
		source string
	)
	if in.Snapshot != "" {
		from = s.client.SnapshotNamed(in.Snapshot)
	} else {
		sb, _, err := s.sandbox(ctx, req, in.Sandbox)
		if err != nil {
			return nil, forkResult{}, err
		}
		from, source = sb, sb.Name()
	}
	forks, err := s.client.Fork(ctx, from, n, sandpod.WithLabels(map[string]string{SessionLabel: sess.id}))
	if err != nil {
		if source != "" {
			return nil, forkResult{}, sandboxError(sess, source, err)
		}
		return nil, forkResult{}, fmt.Errorf("snapshot %s: %w", in.Snapshot, err)
	}
	out := forkResult{Sandbox: source, Snapshot: forks.Snapshot.Name(), Forks: []string{}, EndsWith: "this session's end, or their TTL if sooner"}
	if in.Keep {
		out.EndsWith = "their TTL or delete_sandbox: they outlive this session"
	}
	for _, f := range forks.Sandboxes {
		out.Forks = append(out.Forks, f.Name())
		if !in.Keep {
			if err := sess.own(ctx, f); err != nil {
				return nil, forkResult{}, err
			}
		}
	}
	return nil, out, nil
}
