package bridge

import (
	"context"
	"crypto/subtle"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/sandpod/sandpod/core/api/errinfo"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Caller is an authenticated caller of the API.
type Caller struct {
	// Name identifies the caller in messages and logs.
	Name string
	// Allow says whether the caller may act in namespace ns (a gRPC status
	// error when not); nil allows every namespace.
	Allow func(ctx context.Context, ns string) error
}

// Authenticator maps a bearer token to its caller. It returns (nil, nil)
// for a token it does not know, so the next authenticator can try.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*Caller, error)
}

// Token is one bearer token and the namespaces it may act in (none: all).
type Token struct {
	Secret     string
	Namespaces []string
}

// StaticTokens authenticates a fixed list of tokens.
type StaticTokens []Token

// Authenticate finds the token in constant time per candidate.
func (s StaticTokens) Authenticate(_ context.Context, token string) (*Caller, error) {
	for i := range s {
		if subtle.ConstantTimeCompare([]byte(token), []byte(s[i].Secret)) == 1 {
			return s[i].caller(i), nil
		}
	}
	return nil, nil
}

func (t Token) caller(i int) *Caller {
	c := &Caller{Name: fmt.Sprintf("token #%d", i+1)}
	if len(t.Namespaces) > 0 {
		c.Allow = func(_ context.Context, ns string) error {
			if slices.Contains(t.Namespaces, ns) {
				return nil
			}
			return errinfo.Newf(codes.PermissionDenied, errinfo.ReasonNamespaceForbidden, "namespace %q: this token may use only %s", ns, strings.Join(t.Namespaces, ", "))
		}
	}
	return c
}

// ParseTokens reads a token file: one token a line, optionally followed by
// the namespaces it is limited to, comma-separated ("s3cret team-a,team-b").
// Blank lines and lines starting with # are skipped.
func ParseTokens(text string) ([]Token, error) {
	var out []Token
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) > 2 {
			return nil, fmt.Errorf("token file line %d: want TOKEN [NAMESPACE,...]", i+1)
		}
		t := Token{Secret: fields[0]}
		if len(fields) == 2 {
			for _, ns := range strings.Split(fields[1], ",") {
				if err := checkNamespace(ns); err != nil || ns == "" {
					return nil, fmt.Errorf("token file line %d: bad namespace %q", i+1, ns)
				}
				t.Namespaces = append(t.Namespaces, ns)
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// auth checks "authorization: Bearer <token>" with each authenticator in
// turn and keeps the caller to its namespaces: Unauthenticated without a
// known token, PermissionDenied in another namespace. With no
// authenticators every caller is let in (the local default, bound to
// loopback). Health checks are always allowed, for probes.
type auth struct{ authenticators []Authenticator }

func (a *auth) caller(ctx context.Context, method string) (*Caller, error) {
	if len(a.authenticators) == 0 || strings.HasPrefix(method, "/grpc.health.v1.Health/") {
		return nil, nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		token, ok := strings.CutPrefix(v, "Bearer ")
		if !ok || token == "" {
			continue
		}
		c, err := a.tokenCaller(ctx, token)
		if err != errUnknownToken { // the sentinel itself: else try the next header
			return c, err
		}
	}
	return nil, errUnknownToken
}

var errUnknownToken = errinfo.Newf(codes.Unauthenticated, errinfo.ReasonInvalidToken, "missing or unknown bearer token (set SANDPOD_TOKEN or pass token=)")

// tokenCaller finds the caller of token: nil without authenticators,
// Unauthenticated for a token none knows.
func (a *auth) tokenCaller(ctx context.Context, token string) (*Caller, error) {
	if len(a.authenticators) == 0 {
		return nil, nil
	}
	for _, au := range a.authenticators {
		c, err := au.Authenticate(ctx, token)
		if err != nil {
			return nil, err
		}
		if c != nil {
			return c, nil
		}
	}
	return nil, errUnknownToken
}

// allow checks the namespace a request names against the caller.
func allow(ctx context.Context, c *Caller, msg any) error {
	if c == nil || c.Allow == nil {
		return nil
	}
	ns, ok := namespaceOf(msg)
	if !ok {
		return nil
	}
	if ns == "" {
		ns = "default"
	}
	return c.Allow(ctx, ns)
}

// namespaceOf finds the namespace a request message acts in.
func namespaceOf(msg any) (string, bool) {
	switch m := msg.(type) {
	case *sandpodv1.ExecRequest:
		if st := m.GetStart(); st != nil {
			return st.GetNamespace(), true
		}
		return "", false
	case *sandpodv1.WriteFileRequest:
		if h := m.GetHeader(); h != nil {
			return h.GetNamespace(), true
		}
		return "", false
	case interface{ GetNamespace() string }:
		return m.GetNamespace(), true
	}
	return "", false
}

func (a *auth) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	c, err := a.caller(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	if err := allow(ctx, c, req); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (a *auth) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	c, err := a.caller(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	// The caller goes in the context for the stream limit, which counts
	// streams per caller.
	return h(srv, &scopedStream{ServerStream: ss, caller: c, ctx: withCaller(ss.Context(), c)})
}

// scopedStream carries the caller and checks every message it receives
// against it.
type scopedStream struct {
	grpc.ServerStream
	caller *Caller
	ctx    context.Context
}

func (s *scopedStream) Context() context.Context { return s.ctx }

func (s *scopedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return allow(s.Context(), s.caller, m)
}
