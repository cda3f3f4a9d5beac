package bridge

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/netutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/api/errinfo"
)

// Defaults of the limits on what callers hold open (docs/security.md,
// "Streams and connections"). Each stream costs the server 20 to 35 KiB
// and a goroutine or two, an idle connection about 25 KiB (measured on
// serve).
const (
	// DefaultStreamsPerCaller bounds the streams one caller (one token, or
	// every caller without a token together) holds open at once: ~35 MiB.
	DefaultStreamsPerCaller = 1024
	// DefaultStreamsPerConn is gRPC's MaxConcurrentStreams on network
	// connections; above DefaultStreamsPerCaller, so that a caller on one
	// connection meets the per-caller limit (an error naming it), not the
	// per-connection one (gRPC clients queue those streams silently).
	DefaultStreamsPerConn = 2048
	// DefaultConnsPerListener bounds the connections each listener (gRPC,
	// HTTP, E2B, previews) holds at once; past it new ones wait to be
	// accepted.
	DefaultConnsPerListener = 4096
)

// StreamFlag is the flag that sets the per-caller stream limit, of
// `sandpod serve`, `sandpod bridge` and `sandpod mcp --listen`.
const StreamFlag = "--max-streams-per-caller"

// anonymous is the one identity of callers without a token: every caller
// when the server has no authenticators, health watchers when it has.
const anonymous = ""

// admitStream is the decision: a caller holding open streams may open
// one more while it holds fewer than limit; a limit of 0 or less is none.
func admitStream(open, limit int) bool {
	return limit <= 0 || open < limit
}

// StreamLimiter counts the streams each caller holds open, across every
// door that holds one: the gRPC server (network and in-process, so that a
// stream of the HTTP or E2B API is counted once, as the gRPC stream it
// opens) and the HTTP streams that hold none (an E2B client following a
// running command, an MCP session's event stream).
type StreamLimiter struct {
	limit int
	raise string // how to raise the limit, for the refusal
	mu    sync.Mutex
	open  map[string]int
}

// NewStreamLimiter returns a limiter of limit streams per caller (0: no
// limit; the counts are kept all the same); command is the one whose
// StreamFlag sets it ("sandpod serve/bridge"), named in refusals.
func NewStreamLimiter(limit int, command string) *StreamLimiter {
	return &StreamLimiter{limit: limit, raise: command + " " + StreamFlag, open: map[string]int{}}
}

// Acquire counts one more stream of the caller named id (anonymous for
// callers without a token), or refuses it with RESOURCE_EXHAUSTED when
// the caller holds the limit. release, called once when the stream ends,
// gives it back; a nil limiter admits everything.
func (l *StreamLimiter) Acquire(id string) (release func(), err error) {
	if l == nil {
		return func() {}, nil
	}
	l.mu.Lock()
	n := l.open[id]
	if !admitStream(n, l.limit) {
		l.mu.Unlock()
		return nil, l.refusal(id)
	}
	l.open[id] = n + 1
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.open[id] <= 1 {
				delete(l.open, id) // no entry per caller that ever called
			} else {
				l.open[id]--
			}
		})
	}, nil
}

// Open is how many streams the caller named id holds open.
func (l *StreamLimiter) Open(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[id]
}

func (l *StreamLimiter) refusal(id string) error {
	who := id
	if id == anonymous {
		who = "callers without a token (one count for all of them)"
	}
	return errinfo.New(codes.ResourceExhausted, errinfo.ReasonStreamLimit, map[string]string{"limit": strconv.Itoa(l.limit)},
		fmt.Sprintf("too many open streams: %s already hold %d (execs, watches, file transfers, terminals), the server's limit per caller; close some first, or raise it with %s", who, l.limit, l.raise))
}

// stream is the gRPC stream interceptor; it runs after auth.stream, which
// puts the caller in the stream's context. Unary calls are not counted:
// they end by themselves.
func (l *StreamLimiter) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	release, err := l.Acquire(callerID(callerFrom(ss.Context())))
	if err != nil {
		return err
	}
	defer release()
	return h(srv, ss)
}

// callerID is the identity streams are counted under.
func callerID(c *Caller) string {
	if c == nil {
		return anonymous
	}
	return c.Name
}

type callerKey struct{}

func withCaller(ctx context.Context, c *Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

func callerFrom(ctx context.Context) *Caller {
	c, _ := ctx.Value(callerKey{}).(*Caller)
	return c
}

// ForTokens returns a check for HTTP doors that hold a stream open without
// a gRPC stream behind it: it finds the caller of token with authns (as
// the gRPC server does: none means every caller is anonymous) and counts
// one stream for it.
func (l *StreamLimiter) ForTokens(authns []Authenticator) func(ctx context.Context, token string) (release func(), err error) {
	a := &auth{authenticators: authns}
	return func(ctx context.Context, token string) (func(), error) {
		c, err := a.tokenCaller(ctx, token)
		if err != nil {
			return nil, err
		}
		return l.Acquire(callerID(c))
	}
}

// transportOptions are the server-wide limits of a network gRPC server.
func transportOptions(streamsPerConn uint32) []grpc.ServerOption {
	opts := []grpc.ServerOption{
		// Clients ping every 30s to notice a dead connection during a long,
		// quiet exec; allow it (gRPC's default would close them for it),
		// and close the connection of a client that pings more often.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		// Ping a connection quiet for 2 minutes and close it when the
		// peer does not answer in 20s: a vanished client's streams end
		// and are no longer counted against it.
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 2 * time.Minute, Timeout: 20 * time.Second}),
	}
	if streamsPerConn > 0 {
		opts = append(opts, grpc.MaxConcurrentStreams(streamsPerConn))
	}
	return opts
}

// LimitListener caps the connections lis holds open at once (n <= 0: no
// cap); past it, new connections wait in the kernel's backlog until one
// closes.
func LimitListener(lis net.Listener, n int) net.Listener {
	if n <= 0 {
		return lis
	}
	return netutil.LimitListener(lis, n)
}

// LimitHTTP counts each request to h in flight as a stream of its caller,
// id(r) (anonymous when it returns ""), for an HTTP door whose requests
// hold streams open; over the limit it answers 429 with the refusal's
// message.
func (l *StreamLimiter) LimitHTTP(h http.Handler, id func(*http.Request) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		release, err := l.Acquire(id(r))
		if err != nil {
			http.Error(w, status.Convert(err).Message(), http.StatusTooManyRequests)
			return
		}
		defer release()
		h.ServeHTTP(w, r)
	})
}
