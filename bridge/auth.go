package bridge

import (
	"context"
	"crypto/subtle"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// tokenAuth checks "authorization: Bearer <token>" against static tokens.
// With no tokens configured every caller is let in (the local default, bound
// to loopback). Health checks are always allowed, for probes.
type tokenAuth struct{ tokens [][]byte }

func newTokenAuth(tokens []string) *tokenAuth {
	a := &tokenAuth{}
	for _, t := range tokens {
		if t = strings.TrimSpace(t); t != "" {
			a.tokens = append(a.tokens, []byte(t))
		}
	}
	return a
}

func (a *tokenAuth) check(ctx context.Context, method string) error {
	if len(a.tokens) == 0 || strings.HasPrefix(method, "/grpc.health.v1.Health/") {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		got, ok := strings.CutPrefix(v, "Bearer ")
		if !ok {
			continue
		}
		for _, t := range a.tokens {
			if subtle.ConstantTimeCompare([]byte(got), t) == 1 {
				return nil
			}
		}
	}
	return status.Error(codes.Unauthenticated, "missing or unknown bearer token (set SANDPOD_TOKEN or pass token=)")
}

func (a *tokenAuth) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := a.check(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (a *tokenAuth) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := a.check(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return h(srv, ss)
}
