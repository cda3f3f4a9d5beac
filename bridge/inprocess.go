package bridge

import (
	"context"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
)

// InProcess serves the API on an in-memory listener and returns a client
// connection to it, for the HTTP gateway (bridge/httpapi): its calls pass
// the same interceptors (authentication, namespaces) and validation as a
// network caller's, without a TCP hop, and without TLS (nothing leaves the
// process; o's ServerOptions, such as TLS credentials, and StreamsPerConn
// are not used; its streams count against the same Streams limiter).
// stop closes both ends.
func (s *Server) InProcess(o Options) (conn *grpc.ClientConn, stop func(), err error) {
	lis := bufconn.Listen(1 << 20)
	g, _ := s.GRPCServer(Options{Authenticators: o.Authenticators, Streams: o.Streams})
	go func() { _ = g.Serve(lis) }()
	conn, err = grpc.NewClient("passthrough:///sandpod-in-process",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// As large as the server takes and sends (ListFiles pages, 1 MiB
		// file chunks).
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20), grpc.MaxCallSendMsgSize(8<<20)),
	)
	if err != nil {
		g.Stop()
		return nil, nil, err
	}
	return conn, func() { _ = conn.Close(); g.Stop() }, nil
}
