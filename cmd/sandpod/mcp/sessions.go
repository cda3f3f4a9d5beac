package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// The lifetime rule: an MCP session owns the sandboxes it was given
// without asking for one by name (the first call that names no sandbox
// claims one) and the ones it claimed or forked without keep. They are
// deleted when the session ends: stdio at end of input, a streamable HTTP
// session when the client deletes it or it expires, every session when the
// server shuts down. Owned sandboxes hold a lease the server renews while
// the session lasts, so a server killed before it could delete them leaves
// them only until the lease runs out.

// SessionLabel labels every sandbox an MCP session claims with the
// session's id (one per session, random), to find them with `sandpod ls -l`.
const SessionLabel = "sandpod-mcp-session"

// session is what one MCP session owns.
type session struct {
	id  string
	log *slog.Logger

	mu sync.Mutex
	// current is the sandbox the calls that name none use ("" until the
	// first such call).
	current string
	// owned are deleted when the session ends.
	owned map[string]*sandpod.Sandbox
	ended bool

	// renew lasts as long as the session: the leases of its sandboxes are
	// renewed until it ends.
	renew context.Context
	stop  context.CancelFunc

	endOnce sync.Once
	done    chan struct{}
}

func newSession(log *slog.Logger) *session {
	var b [6]byte
	_, _ = rand.Read(b[:])
	ctx, stop := context.WithCancel(context.Background())
	id := hex.EncodeToString(b[:])
	return &session{
		id: id, log: log.With("mcp_session", id), owned: map[string]*sandpod.Sandbox{},
		renew: ctx, stop: stop, done: make(chan struct{}),
	}
}

// errSessionEnded is a call that raced with the end of its session.
var errSessionEnded = errors.New("this MCP session has ended (or the server is shutting down): its sandboxes are deleted")

// own records sb as the session's, to delete when it ends; a session that
// ended meanwhile deletes it at once.
func (s *session) own(ctx context.Context, sb *sandpod.Sandbox) error {
	s.mu.Lock()
	if !s.ended {
		s.owned[sb.Name()] = sb
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	deleteSandbox(context.WithoutCancel(ctx), s.log, sb)
	return errSessionEnded
}

// forget drops name from what the session owns and uses (it was deleted).
func (s *session) forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.owned, name)
	if s.current == name {
		s.current = ""
	}
}

// isOwned says whether the session deletes name when it ends.
func (s *session) isOwned(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.owned[name]
	return ok
}

// end deletes the session's sandboxes, once; every caller returns when
// they are deleted.
func (s *session) end() {
	s.endOnce.Do(func() {
		s.mu.Lock()
		s.ended = true
		owned := s.owned
		s.owned = map[string]*sandpod.Sandbox{}
		s.current = ""
		s.mu.Unlock()
		s.stop()
		var wg sync.WaitGroup
		for _, sb := range owned {
			wg.Go(func() { deleteSandbox(context.Background(), s.log, sb) })
		}
		wg.Wait()
		if len(owned) > 0 {
			s.log.Info("MCP session ended: its sandboxes are deleted", "sandboxes", len(owned))
		}
		close(s.done)
	})
	<-s.done
}

// deleteTimeout bounds the delete of one sandbox at the end of a session.
const deleteTimeout = 2 * time.Minute

func deleteSandbox(ctx context.Context, log *slog.Logger, sb *sandpod.Sandbox) {
	ctx, cancel := context.WithTimeout(ctx, deleteTimeout)
	defer cancel()
	if err := sb.Delete(ctx); err != nil && !errors.Is(err, sandpod.ErrSandboxNotFound) {
		log.Error("deleting the sandbox of an ended MCP session", "sandbox", sb.Name(), "err", err)
	}
}

// sessions maps the SDK's sessions to what they own.
type sessions struct {
	log *slog.Logger

	mu     sync.Mutex
	byConn map[*sdk.ServerSession]*session
	closed bool
}

// get returns the state of ss, made on its first tool call; ss ending
// ends it.
func (r *sessions) get(ss *sdk.ServerSession) (*session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errSessionEnded
	}
	if s, ok := r.byConn[ss]; ok {
		return s, nil
	}
	s := newSession(r.log)
	if r.byConn == nil {
		r.byConn = map[*sdk.ServerSession]*session{}
	}
	r.byConn[ss] = s
	if ss != nil {
		go func() {
			_ = ss.Wait()
			r.end(ss)
		}()
	}
	return s, nil
}

// end ends the session of ss, then forgets it: until its sandboxes are
// deleted closeAll still finds it, and waits for it.
func (r *sessions) end(ss *sdk.ServerSession) {
	r.mu.Lock()
	s, ok := r.byConn[ss]
	r.mu.Unlock()
	if !ok {
		return
	}
	s.end()
	r.mu.Lock()
	delete(r.byConn, ss)
	r.mu.Unlock()
}

// closeAll ends every session and refuses new ones: the server is
// shutting down.
func (r *sessions) closeAll() {
	r.mu.Lock()
	r.closed = true
	all := make([]*session, 0, len(r.byConn))
	for _, s := range r.byConn {
		all = append(all, s)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Go(s.end)
	}
	wg.Wait()
}
