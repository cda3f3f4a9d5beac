package bridge

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/lifecycle"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Leases are the lease calls of a Backend (lease.proto).
type Leases interface {
	// RenewLease moves the lease of a sandbox that has one
	// (lifecycle.RenewLease decides whether the new expiry is stored) and
	// returns its expiry; FAILED_PRECONDITION (NO_LEASE) without a lease.
	RenewLease(ctx context.Context, namespace, name string) (time.Time, error)
}

// RenewLease renews a sandbox's lease.
func (s *Server) RenewLease(ctx context.Context, req *sandpodv1.RenewLeaseRequest) (*sandpodv1.RenewLeaseResponse, error) {
	if err := checkRef(req.GetName(), req.GetNamespace()); err != nil {
		return nil, err
	}
	exp, err := s.backend.RenewLease(ctx, req.GetNamespace(), req.GetName())
	if err != nil {
		return nil, err
	}
	return &sandpodv1.RenewLeaseResponse{LeaseExpireTime: timestamppb.New(exp)}, nil
}

// checkLease checks the lease of a create or claim (unset: the template's).
func checkLease(d *durationpb.Duration) error {
	if d == nil {
		return nil
	}
	if err := d.CheckValid(); err != nil {
		return invalid(errinfo.ReasonInvalidLifetime, "lease", "%v", err)
	}
	if v := d.AsDuration(); v < lifecycle.MinLease || v > lifecycle.MaxLease {
		return invalid(errinfo.ReasonInvalidLifetime, "lease", "%s is outside %s..%s", v, lifecycle.MinLease, lifecycle.MaxLease)
	}
	return nil
}
