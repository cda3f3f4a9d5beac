package main

import (
	"flag"

	"github.com/sandpod/sandpod/bridge"
)

// limitFlags bound what callers hold open (docs/security.md, "Streams and
// connections"), shared by `serve` and `bridge`.
type limitFlags struct {
	streamsPerCaller int
	streamsPerConn   uint
	connsPerListener int
}

func (f *limitFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.streamsPerCaller, bridge.StreamFlag[2:], bridge.DefaultStreamsPerCaller,
		"most streams (execs, watches, file transfers, code runs, and the HTTP and E2B APIs' streams) one caller holds open at once: per token, or all callers without a token together; more are refused with RESOURCE_EXHAUSTED (HTTP 429); 0: no limit")
	fs.UintVar(&f.streamsPerConn, "max-streams-per-connection", bridge.DefaultStreamsPerConn,
		"most concurrent streams on one gRPC connection (HTTP/2 MAX_CONCURRENT_STREAMS; clients queue the rest); 0: gRPC's default, none")
	fs.IntVar(&f.connsPerListener, "max-connections", bridge.DefaultConnsPerListener,
		"most connections each listener (--listen, --http-listen, --e2b-listen, --preview-listen) holds at once; more wait to be accepted; 0: no limit")
}

// options are the limits as bridge options.
func (f *limitFlags) options() bridge.Options {
	return bridge.Options{
		Streams:          bridge.NewStreamLimiter(f.streamsPerCaller, "sandpod serve/bridge"),
		StreamsPerConn:   uint32(min(f.streamsPerConn, 1<<32-1)),
		ConnsPerListener: f.connsPerListener,
	}
}
