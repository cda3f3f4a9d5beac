package sandpod

import (
	"context"
	"iter"

	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// ListOption configures List, ListPage and Watch.
type ListOption func(*listConfig)

type listConfig struct {
	selector      string
	pageSize      int
	pageToken     string
	poolMembers   bool
	initialEvents bool
}

func newListConfig(opts []ListOption) *listConfig {
	cfg := &listConfig{}
	for _, o := range opts {
		o(cfg)
	}
	return cfg
}

// WithLabelSelector keeps sandboxes whose labels match a Kubernetes label
// selector, e.g. "team=rl,run!=3".
func WithLabelSelector(selector string) ListOption {
	return func(c *listConfig) { c.selector = selector }
}

// WithPageSize sets how many sandboxes one page holds (1..1000; the
// server's default is 100).
func WithPageSize(n int) ListOption {
	return func(c *listConfig) { c.pageSize = n }
}

// WithPageToken continues ListPage from a previous page's token.
func WithPageToken(token string) ListOption {
	return func(c *listConfig) { c.pageToken = token }
}

// WithPoolMembers includes unclaimed warm pool members.
func WithPoolMembers() ListOption {
	return func(c *listConfig) { c.poolMembers = true }
}

// WithInitialEvents makes Watch first send an Added event for every
// sandbox that already exists (ignored by List).
func WithInitialEvents() ListOption {
	return func(c *listConfig) { c.initialEvents = true }
}

// ListPage returns one page of sandboxes and the token of the next page
// ("" on the last page).
func (c *Client) ListPage(ctx context.Context, opts ...ListOption) ([]*Sandbox, string, error) {
	cfg := newListConfig(opts)
	req := &pb.ListSandboxesRequest{
		Namespace:          c.ns,
		LabelSelector:      cfg.selector,
		PageSize:           int32(cfg.pageSize),
		PageToken:          cfg.pageToken,
		IncludePoolMembers: cfg.poolMembers,
	}
	var resp *pb.ListSandboxesResponse
	err := c.retry(ctx, "list", func(ctx context.Context, _ int) (err error) {
		resp, err = c.rpc.ListSandboxes(ctx, req)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	out := make([]*Sandbox, 0, len(resp.GetSandboxes()))
	for _, p := range resp.GetSandboxes() {
		out = append(out, c.handle(p))
	}
	return out, resp.GetNextPageToken(), nil
}

// List iterates over all sandboxes of the namespace, page by page. An
// error ends the iteration after being yielded once:
//
//	for sb, err := range client.List(ctx, sandpod.WithLabelSelector("team=rl")) {
//		if err != nil { return err }
//		fmt.Println(sb.Name(), sb.Info().Phase)
//	}
func (c *Client) List(ctx context.Context, opts ...ListOption) iter.Seq2[*Sandbox, error] {
	return func(yield func(*Sandbox, error) bool) {
		opts := append(opts[:len(opts):len(opts)], nil)
		token := newListConfig(opts[:len(opts)-1]).pageToken
		for {
			opts[len(opts)-1] = WithPageToken(token)
			page, next, err := c.ListPage(ctx, opts...)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, s := range page {
				if !yield(s, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			token = next
		}
	}
}

// ListAll collects List into a slice.
func (c *Client) ListAll(ctx context.Context, opts ...ListOption) ([]*Sandbox, error) {
	var out []*Sandbox
	for s, err := range c.List(ctx, opts...) {
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
