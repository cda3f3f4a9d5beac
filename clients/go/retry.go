package sandpod

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// RetryPolicy says how calls that are safe to repeat are retried: with an
// exponential, jittered backoff, bounded by the call's context, by
// MaxElapsedTime and by MaxAttempts.
//
// Only these calls are retried: Get, List, Watch's first connection,
// Suspend, Resume, Extend, Delete, the template and pool calls, the file
// calls that do not write data (ReadFile resumes at the offset it reached),
// and Create and Claim, whose request id is generated once per call and
// sent again on every attempt so that the server hands out one sandbox.
// Exec and file writes are never replayed.
//
// The codes retried are Unavailable and Aborted, DeadlineExceeded of one
// attempt when WithCallTimeout is set and the call's context has time
// left, and ResourceExhausted for Create and Claim only, where it is the
// server's back-pressure or a quota that frees up. Elsewhere, and above all
// from a sandbox's agent (files, exec), ResourceExhausted is a limit that a
// repeat would hit again (a message over the size limit, a full disk, the
// process limit): it is returned at once, with the server's message.
type RetryPolicy struct {
	// InitialInterval is the first wait (default 100ms).
	InitialInterval time.Duration
	// MaxInterval caps each wait (default 5s).
	MaxInterval time.Duration
	// Multiplier grows the wait after each attempt (default 2).
	Multiplier float64
	// RandomizationFactor spreads each wait over
	// [w*(1-f), w*(1+f)] (default 0.5).
	RandomizationFactor float64
	// MaxElapsedTime stops retrying after this long since the first attempt
	// (default 1 minute; negative means no limit besides the context).
	MaxElapsedTime time.Duration
	// MaxAttempts counts the first attempt; 0 means no limit, 1 means no
	// retry.
	MaxAttempts int
	// OnRetry, if set, is called before each wait with the operation, the
	// error of the attempt that failed and the wait (for logs and metrics).
	OnRetry func(op string, err error, wait time.Duration)
}

// DefaultRetryPolicy returns the policy a Client uses unless told
// otherwise.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{
		InitialInterval:     100 * time.Millisecond,
		MaxInterval:         5 * time.Second,
		Multiplier:          2,
		RandomizationFactor: 0.5,
		MaxElapsedTime:      time.Minute,
	}
}

// NoRetry makes every call a single attempt.
var NoRetry = RetryPolicy{MaxAttempts: 1}

// backOff builds the backoff for one logical call.
func (p RetryPolicy) backOff(ctx context.Context) backoff.BackOff {
	d := DefaultRetryPolicy()
	e := backoff.NewExponentialBackOff()
	e.InitialInterval = orDefault(p.InitialInterval, d.InitialInterval)
	e.MaxInterval = orDefault(p.MaxInterval, d.MaxInterval)
	e.Multiplier = p.Multiplier
	if e.Multiplier < 1 {
		e.Multiplier = d.Multiplier
	}
	e.RandomizationFactor = p.RandomizationFactor
	if e.RandomizationFactor <= 0 || e.RandomizationFactor >= 1 {
		e.RandomizationFactor = d.RandomizationFactor
	}
	switch {
	case p.MaxElapsedTime < 0:
		e.MaxElapsedTime = 0
	case p.MaxElapsedTime == 0:
		e.MaxElapsedTime = d.MaxElapsedTime
	default:
		e.MaxElapsedTime = p.MaxElapsedTime
	}
	e.Reset()
	var b backoff.BackOff = e
	if p.MaxAttempts > 0 {
		b = backoff.WithMaxRetries(b, uint64(p.MaxAttempts-1))
	}
	return backoff.WithContext(b, ctx)
}

func orDefault(v, d time.Duration) time.Duration {
	if v <= 0 {
		return d
	}
	return v
}

// isTransient reports whether an attempt of op that failed with err may be
// repeated. parent is the context of the whole call; perAttempt says
// whether the attempt had its own timeout (WithCallTimeout).
func isTransient(parent context.Context, op string, err error, perAttempt bool) bool {
	if parent.Err() != nil {
		return false
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.Aborted:
		return true
	case codes.ResourceExhausted:
		return backPressureOps[op]
	case codes.DeadlineExceeded:
		return perAttempt
	}
	return false
}

// backPressureOps are the calls whose ResourceExhausted is retried: the
// server answers a burst of claims or creates with it, and a quota frees
// up. Everything else that can be exhausted (an agent's limits, gRPC's
// message size, a pool's size limit) stays exhausted.
var backPressureOps = map[string]bool{"claim": true, "create": true}

// attemptFunc is one attempt of a call; attempt counts from 1.
type attemptFunc func(ctx context.Context, attempt int) error

// retry runs fn until it succeeds, fails with an error that is not
// transient, or the policy or ctx gives up. Each attempt gets its own
// timeout when the client has one. The error returned is an *Error.
func (c *Client) retry(ctx context.Context, op string, fn attemptFunc) error {
	return c.doRetry(ctx, op, c.cfg.callTimeout, fn)
}

// retryStream is retry for opening streams, whose context must outlive
// the attempt: no per-attempt timeout.
func (c *Client) retryStream(ctx context.Context, op string, fn attemptFunc) error {
	return c.doRetry(ctx, op, 0, fn)
}

func (c *Client) doRetry(ctx context.Context, op string, timeout time.Duration, fn attemptFunc) error {
	if err := c.check(); err != nil {
		return err
	}
	if err := c.awaitServer(ctx, op); err != nil {
		return err
	}
	attempt := 0
	var last error
	err := backoff.RetryNotify(func() error {
		attempt++
		actx, cancel := ctx, context.CancelFunc(func() {})
		if timeout > 0 {
			actx, cancel = context.WithTimeout(ctx, timeout)
		}
		err := fn(actx, attempt)
		cancel()
		if err == nil {
			return nil
		}
		last = err
		if c.closed.Load() {
			return backoff.Permanent(ErrClosed)
		}
		if !isTransient(ctx, op, err, timeout > 0) {
			return backoff.Permanent(err)
		}
		return err
	}, c.cfg.retry.backOff(ctx), func(err error, wait time.Duration) {
		if c.cfg.retry.OnRetry != nil {
			c.cfg.retry.OnRetry(op, err, wait)
		}
	})
	if err == nil {
		return nil
	}
	// The context ended where the call would have been retried: report
	// that, with what the last attempt said.
	if ctx.Err() != nil && last != nil && !isContextError(last) && isTransient(context.Background(), op, last, timeout > 0) {
		st := status.FromContextError(ctx.Err())
		return wrapError(op, status.Error(st.Code(), fmt.Sprintf("%s after %d attempts; last error: %s", st.Message(), attempt, statusOf(last).Message())))
	}
	return wrapError(op, err)
}

func isContextError(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	c := status.Code(err)
	return c == codes.Canceled || c == codes.DeadlineExceeded
}
