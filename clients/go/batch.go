package sandpod

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// WithConcurrency bounds how many claims ClaimMany has in flight (default
// 16).
func WithConcurrency(n int) SandboxOption {
	return sandboxOptionFunc(func(c *sandboxConfig) { c.concurrency = n })
}

// ClaimMany claims n sandboxes of the template, at most WithConcurrency at
// a time, for batches such as RL rollouts. It is all or nothing: when a
// claim fails or ctx ends, the sandboxes already claimed are deleted
// before the error is returned.
//
// Each claim has its own request id. Given WithRequestID(id), claim i uses
// "id-i", so that calling ClaimMany again with the same id (after a crash
// of the caller) returns the same sandboxes.
func (c *Client) ClaimMany(ctx context.Context, template string, n int, opts ...SandboxOption) ([]*Sandbox, error) {
	if n < 0 {
		return nil, fmt.Errorf("sandpod: claim many: n must not be negative, got %d", n)
	}
	cfg := &sandboxConfig{concurrency: 16}
	for _, o := range opts {
		o.applySandbox(cfg)
	}
	workers := min(max(cfg.concurrency, 1), n)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make([]*Sandbox, n)
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				one := opts[:len(opts):len(opts)]
				if cfg.requestID != "" {
					one = append(one, WithRequestID(fmt.Sprintf("%s-%d", cfg.requestID, i)))
				} else {
					one = append(one, WithRequestID(newRequestID()))
				}
				sb, err := c.Claim(ctx, template, one...)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
					cancel()
				}
				out[i] = sb
				mu.Unlock()
			}
		})
	}
	fed := 0
feed:
	for ; fed < n; fed++ {
		select {
		case next <- fed:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()

	if firstErr == nil && fed < n {
		firstErr = ctx.Err() // the caller's ctx ended before all started
	}
	if firstErr == nil {
		return out, nil
	}
	// All or nothing: release what was claimed.
	dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer dcancel()
	var errs []error
	for _, sb := range out {
		if sb != nil {
			if err := sb.Delete(dctx); err != nil && !errors.Is(err, ErrNotFound) {
				errs = append(errs, err)
			}
		}
	}
	return nil, errors.Join(append([]error{wrapError("claim many", firstErr)}, errs...)...)
}
