package sandpod

import (
	"io"
	"sync"
)

// bufPipe is an in-memory pipe whose writes never block: output a process
// sends before anyone reads it waits in memory (the server caps each
// stream at ExecStart.max_output_bytes). Reads block until data arrives
// or the pipe is closed.
type bufPipe struct {
	mu     sync.Mutex
	cond   sync.Cond
	chunks [][]byte
	err    error // set when closed: io.EOF or the stream's error
}

func newBufPipe() *bufPipe {
	p := &bufPipe{}
	p.cond.L = &p.mu
	return p
}

func (p *bufPipe) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	c := make([]byte, len(b))
	copy(c, b)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return 0, io.ErrClosedPipe
	}
	p.chunks = append(p.chunks, c)
	p.cond.Broadcast()
	return len(b), nil
}

func (p *bufPipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.chunks) == 0 && p.err == nil {
		p.cond.Wait()
	}
	if len(p.chunks) == 0 {
		return 0, p.err
	}
	n := copy(b, p.chunks[0])
	if n == len(p.chunks[0]) {
		p.chunks[0] = nil
		p.chunks = p.chunks[1:]
	} else {
		p.chunks[0] = p.chunks[0][n:]
	}
	return n, nil
}

// closeWithError ends the pipe: reads return what is buffered, then err
// (io.EOF when err is nil).
func (p *bufPipe) closeWithError(err error) {
	if err == nil {
		err = io.EOF
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
	p.cond.Broadcast()
}
