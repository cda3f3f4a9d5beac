package bridge

import (
	"context"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// SnapshotSandbox validates and snapshots a sandbox's files.
func (s *Server) SnapshotSandbox(ctx context.Context, req *sandpodv1.SnapshotSandboxRequest) (*sandpodv1.SnapshotSandboxResponse, error) {
	if err := firstError(
		checkName("sandbox", req.GetSandbox(), true),
		checkNamespace(req.GetNamespace()),
		checkName("name", req.GetName(), false),
		checkLabels("labels", req.GetLabels()),
		checkRequestID(req.GetRequestId()),
	); err != nil {
		return nil, err
	}
	snap, err := s.backend.SnapshotSandbox(ctx, req)
	if err != nil {
		return nil, err
	}
	return &sandpodv1.SnapshotSandboxResponse{Snapshot: snap}, nil
}

// GetSnapshot returns one snapshot.
func (s *Server) GetSnapshot(ctx context.Context, req *sandpodv1.GetSnapshotRequest) (*sandpodv1.GetSnapshotResponse, error) {
	if err := checkRef(req.GetName(), req.GetNamespace()); err != nil {
		return nil, err
	}
	snap, err := s.backend.GetSnapshot(ctx, req.GetNamespace(), req.GetName())
	if err != nil {
		return nil, err
	}
	return &sandpodv1.GetSnapshotResponse{Snapshot: snap}, nil
}

// ListSnapshots returns one page of matching snapshots.
func (s *Server) ListSnapshots(ctx context.Context, req *sandpodv1.ListSnapshotsRequest) (*sandpodv1.ListSnapshotsResponse, error) {
	if err := checkNamespace(req.GetNamespace()); err != nil {
		return nil, err
	}
	sel, err := parseSelector(req.GetLabelSelector())
	if err != nil {
		return nil, err
	}
	pg, err := newPage("ListSnapshots", req.GetNamespace(), req.GetPageSize(), req.GetPageToken(), sel.String())
	if err != nil {
		return nil, err
	}
	all, err := s.backend.ListSnapshots(ctx, req.GetNamespace(), sel)
	if err != nil {
		return nil, err
	}
	items, next, err := pageOf(pg, all, (*sandpodv1.Snapshot).GetName)
	if err != nil {
		return nil, err
	}
	return &sandpodv1.ListSnapshotsResponse{Snapshots: items, NextPageToken: next}, nil
}

// DeleteSnapshot deletes a snapshot nothing uses.
func (s *Server) DeleteSnapshot(ctx context.Context, req *sandpodv1.DeleteSnapshotRequest) (*sandpodv1.DeleteSnapshotResponse, error) {
	if err := checkRef(req.GetName(), req.GetNamespace()); err != nil {
		return nil, err
	}
	if err := s.backend.DeleteSnapshot(ctx, req.GetNamespace(), req.GetName()); err != nil {
		return nil, err
	}
	return &sandpodv1.DeleteSnapshotResponse{}, nil
}

// ForkSandbox validates and makes count sandboxes from a snapshot or sandbox.
func (s *Server) ForkSandbox(ctx context.Context, req *sandpodv1.ForkSandboxRequest) (*sandpodv1.ForkSandboxResponse, error) {
	if err := firstError(
		checkNamespace(req.GetNamespace()),
		checkForkSource(req.GetSnapshot(), req.GetSandbox()),
		checkForkCount(req.GetCount()),
		checkName("template", req.GetTemplate(), false),
		checkLabels("labels", req.GetLabels()),
		checkEnv("env", req.GetEnv()),
		checkLifetime(req.GetTtl(), nil, s.now()),
		checkPolicy(req.GetShutdownPolicy()),
		checkRequestID(req.GetRequestId()),
	); err != nil {
		return nil, err
	}
	sbs, snap, err := s.backend.ForkSandbox(ctx, req)
	if err != nil {
		return nil, err
	}
	return &sandpodv1.ForkSandboxResponse{Sandboxes: sbs, Snapshot: snap}, nil
}

// RestoreSandbox puts a sandbox's files back to a snapshot.
func (s *Server) RestoreSandbox(ctx context.Context, req *sandpodv1.RestoreSandboxRequest) (*sandpodv1.RestoreSandboxResponse, error) {
	if err := firstError(
		checkRef(req.GetName(), req.GetNamespace()),
		checkName("snapshot", req.GetSnapshot(), true),
	); err != nil {
		return nil, err
	}
	sb, err := s.backend.RestoreSandbox(ctx, req)
	if err != nil {
		return nil, err
	}
	return &sandpodv1.RestoreSandboxResponse{Sandbox: sb}, nil
}
