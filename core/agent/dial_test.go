package agent

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/agentconn"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Dial reaches a port on loopback, carries bytes both ways, honours a
// half-close, and tells a closed port (FAILED_PRECONDITION) apart.
func TestDialLoopback(t *testing.T) {
	srv, err := New(Config{Sandbox: "sb", Root: t.TempDir(), Secret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	conn := serveInMemory(t, srv)
	ctx := metadata.AppendToOutgoingContext(context.Background(), agentconn.SecretMetadataKey, "s")
	agent := sandpodv1.NewAgentServiceClient(conn)

	// An upper-casing server that answers after the client's half-close.
	app, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	go func() {
		c, err := app.Accept()
		if err != nil {
			return
		}
		b, _ := io.ReadAll(c)
		_, _ = c.Write(bytes.ToUpper(b))
		c.Close()
	}()
	port := int32(app.Addr().(*net.TCPAddr).Port)
	st, err := agent.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = st.Send(&sandpodv1.DialRequest{Port: port})
	if first, err := st.Recv(); err != nil || !first.GetConnected() {
		t.Fatalf("open: %v %v", first, err)
	}
	_ = st.Send(&sandpodv1.DialRequest{Data: []byte("hello ")})
	_ = st.Send(&sandpodv1.DialRequest{Data: []byte("tunnel")})
	_ = st.CloseSend()
	var got []byte
	for {
		msg, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, msg.GetData()...)
	}
	if string(got) != "HELLO TUNNEL" {
		t.Fatalf("got %q", got)
	}

	app.Close() // now nothing listens there
	st, _ = agent.Dial(ctx)
	_ = st.Send(&sandpodv1.DialRequest{Port: port})
	if _, err := st.Recv(); !IsPortClosed(err) {
		t.Fatalf("closed port: %v, want FAILED_PRECONDITION", err)
	}
	for _, bad := range []int32{0, 70000} {
		st, _ = agent.Dial(ctx)
		_ = st.Send(&sandpodv1.DialRequest{Port: bad})
		if _, err := st.Recv(); status.Code(err) != codes.InvalidArgument {
			t.Errorf("port %d: %v, want INVALID_ARGUMENT", bad, err)
		}
	}
}
