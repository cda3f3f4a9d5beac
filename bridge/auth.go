package bridge

import (
	"context"
	"crypto/subtle"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Token is one bearer token and the namespaces it may act in (none: all).
type Token struct {
	Secret     string
	Namespaces []string
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

// tokenAuth checks "authorization: Bearer <token>" against static tokens
// and keeps each caller to its token's namespaces: Unauthenticated without a
// known token, PermissionDenied in another namespace. With no tokens
// configured every caller is let in (the local default, bound to loopback).
// Health checks are always allowed, for probes.
type tokenAuth struct{ tokens []Token }

func newTokenAuth(tokens []Token) *tokenAuth { return &tokenAuth{tokens: tokens} }

func (a *tokenAuth) caller(ctx context.Context, method string) (*Token, error) {
	if len(a.tokens) == 0 || strings.HasPrefix(method, "/grpc.health.v1.Health/") {
		return nil, nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		got, ok := strings.CutPrefix(v, "Bearer ")
		if !ok {
			continue
		}
		for i := range a.tokens {
			if subtle.ConstantTimeCompare([]byte(got), []byte(a.tokens[i].Secret)) == 1 {
				return &a.tokens[i], nil
			}
		}
	}
	return nil, status.Error(codes.Unauthenticated, "missing or unknown bearer token (set SANDPOD_TOKEN or pass token=)")
}

// allow checks the namespace a request names against the caller's token.
func allow(t *Token, msg any) error {
	if t == nil || len(t.Namespaces) == 0 {
		return nil
	}
	ns, ok := namespaceOf(msg)
	if !ok {
		return nil
	}
	if ns == "" {
		ns = "default"
	}
	for _, allowed := range t.Namespaces {
		if ns == allowed {
			return nil
		}
	}
	return status.Errorf(codes.PermissionDenied, "namespace %q: this token may use only %s", ns, strings.Join(t.Namespaces, ", "))
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

func (a *tokenAuth) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	t, err := a.caller(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	if err := allow(t, req); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (a *tokenAuth) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	t, err := a.caller(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	if t == nil || len(t.Namespaces) == 0 {
		return h(srv, ss)
	}
	return h(srv, &scopedStream{ServerStream: ss, token: t})
}

// scopedStream checks every message it receives against the token.
type scopedStream struct {
	grpc.ServerStream
	token *Token
}

func (s *scopedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return allow(s.token, m)
}
