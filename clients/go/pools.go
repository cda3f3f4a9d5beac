package sandpod

import (
	"context"

	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Templates returns the namespace's sandbox templates.
func (c *Client) Templates(ctx context.Context) ([]Template, error) {
	var out []Template
	token := ""
	for {
		var resp *pb.ListTemplatesResponse
		err := c.retry(ctx, "templates", func(ctx context.Context, _ int) (err error) {
			resp, err = c.rpc.ListTemplates(ctx, &pb.ListTemplatesRequest{Namespace: c.ns, PageToken: token})
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, t := range resp.GetTemplates() {
			out = append(out, templateFromProto(t))
		}
		if token = resp.GetNextPageToken(); token == "" {
			return out, nil
		}
	}
}

// WarmPools returns the namespace's warm pools.
func (c *Client) WarmPools(ctx context.Context) ([]WarmPool, error) {
	var out []WarmPool
	token := ""
	for {
		var resp *pb.ListWarmPoolsResponse
		err := c.retry(ctx, "warm pools", func(ctx context.Context, _ int) (err error) {
			resp, err = c.rpc.ListWarmPools(ctx, &pb.ListWarmPoolsRequest{Namespace: c.ns, PageToken: token})
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, p := range resp.GetWarmPools() {
			out = append(out, warmPoolFromProto(p))
		}
		if token = resp.GetNextPageToken(); token == "" {
			return out, nil
		}
	}
}

// WarmPool returns one warm pool by name.
func (c *Client) WarmPool(ctx context.Context, name string) (WarmPool, error) {
	var resp *pb.GetWarmPoolResponse
	err := c.retry(ctx, "warm pool", func(ctx context.Context, _ int) (err error) {
		resp, err = c.rpc.GetWarmPool(ctx, &pb.GetWarmPoolRequest{Name: name, Namespace: c.ns})
		return err
	})
	if err != nil {
		return WarmPool{}, err
	}
	return warmPoolFromProto(resp.GetWarmPool()), nil
}

// ScaleWarmPool sets the number of ready sandboxes a warm pool keeps
// (0..1000).
func (c *Client) ScaleWarmPool(ctx context.Context, name string, replicas int) (WarmPool, error) {
	var resp *pb.ScaleWarmPoolResponse
	err := c.retry(ctx, "scale warm pool", func(ctx context.Context, _ int) (err error) {
		resp, err = c.rpc.ScaleWarmPool(ctx, &pb.ScaleWarmPoolRequest{Name: name, Namespace: c.ns, Replicas: int32(replicas)})
		return err
	})
	if err != nil {
		return WarmPool{}, err
	}
	return warmPoolFromProto(resp.GetWarmPool()), nil
}
