package local

import (
	"errors"

	"google.golang.org/grpc/codes"

	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/protoconv"
	"github.com/sandpod/sandpod/core/engine"
)

// codeOf is the gRPC code of each kind of engine error.
var codeOf = map[engine.Kind]codes.Code{
	engine.ErrInvalid:     codes.InvalidArgument,
	engine.ErrNotFound:    codes.NotFound,
	engine.ErrExists:      codes.AlreadyExists,
	engine.ErrConflict:    codes.FailedPrecondition,
	engine.ErrExhausted:   codes.ResourceExhausted,
	engine.ErrUnavailable: codes.Unavailable,
	engine.ErrDeadline:    codes.DeadlineExceeded,
	engine.ErrInternal:    codes.Internal,
	engine.ErrUnsupported: codes.Unimplemented,
}

// toStatus turns an engine error into the gRPC status of the contract:
// the code of its kind, its reason and metadata, its message. Other errors
// pass as they are.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	var (
		e   *engine.Error
		nf  *engine.NotFoundError
		use *engine.InUseError
		q   *engine.QuotaError
		ref *engine.RefusalError
		ph  *engine.PhaseError
	)
	switch {
	case errors.As(err, &e):
		code, ok := codeOf[e.Kind]
		if !ok {
			code = codes.Internal
		}
		return errinfo.New(code, e.Reason, e.Meta, e.Msg)
	case errors.As(err, &nf):
		switch {
		case nf.Snapshot:
			return errinfo.SnapshotNotFound(nf.Namespace, nf.Name)
		case nf.Msg != "":
			return errinfo.SandboxGone(nf.Namespace, nf.Name, nf.Msg)
		}
		return errinfo.SandboxNotFound(nf.Namespace, nf.Name)
	case errors.As(err, &use):
		return errinfo.SnapshotInUse(use.Namespace, use.Name, use.Users)
	case errors.As(err, &q):
		return q.Refusal.Err(q.Namespace, q.Template)
	case errors.As(err, &ref):
		return protoconv.Refusal(ref.Target, ref.Why)
	case errors.As(err, &ph):
		return protoconv.AgentRefusal(ph.Namespace, ph.Name, ph.Phase, ph.Detail)
	}
	return err
}
