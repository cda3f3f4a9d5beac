package agent

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Limits of code execution. The executor runs the sandbox's (hostile) code
// in its own process, so everything it sends back is bounded here.
const (
	// MaxCodeBytes bounds one cell's code.
	MaxCodeBytes = 1 << 20
	// MaxCodeContexts bounds the interpreters of one sandbox.
	MaxCodeContexts = 8
	// MaxResultBytes bounds one MIME bundle (it must fit a 4 MiB gRPC
	// message with room to spare); larger representations are dropped.
	MaxResultBytes = 2 << 20
	// MaxCellResultBytes bounds all the results of one cell.
	MaxCellResultBytes = 16 << 20
	// MaxCellOutput bounds each of stdout and stderr per cell.
	MaxCellOutput = 16 << 20
	// maxFrame bounds one frame from the executor: a result's
	// representations in base64 plus JSON, with room over MaxResultBytes
	// so a too large result is dropped and reported rather than killing
	// the context.
	maxFrame = 24 << 20
	// maxErrorText bounds an error's value and traceback.
	maxErrorText = 256 << 10
)

// contextIDPattern is the form of a code context id: a DNS-1123 label.
var contextIDPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// DefaultCodeContext is the id of the context used when a call names none.
const DefaultCodeContext = "default"

// CheckContextID checks a code context id ("" is allowed where it means
// the default context or a generated id).
func CheckContextID(id string) error {
	if id == "" || contextIDPattern.MatchString(id) {
		return nil
	}
	return fmt.Errorf("%q is not a valid context id: lowercase letters, digits and '-', 1 to 63 characters, starting and ending with a letter or digit", truncateForMessage(id))
}

// CheckLanguage says whether a language can be run ("" means python).
func CheckLanguage(lang string) error {
	if lang == "" || lang == "python" {
		return nil
	}
	return fmt.Errorf("%q is not supported: the only language is \"python\" (a python3 interpreter in the sandbox)", truncateForMessage(lang))
}

func truncateForMessage(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// writeFrame writes one length-prefixed JSON frame.
func writeFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf := make([]byte, 4, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	_, err = w.Write(append(buf, b...))
	return err
}

// execFrame is a frame from the executor.
type execFrame struct {
	T         string            `json:"t"`
	Python    string            `json:"python,omitempty"`
	Data      map[string]string `json:"data,omitempty"`
	B64       []string          `json:"b64,omitempty"`
	Main      bool              `json:"main,omitempty"`
	Name      string            `json:"name,omitempty"`
	Value     string            `json:"value,omitempty"`
	Traceback string            `json:"traceback,omitempty"`
	Count     int64             `json:"count,omitempty"`
	Marked    []int             `json:"marked,omitempty"`
}

// readFrame reads one frame, refusing one over max bytes.
func readFrame(r io.Reader, max int) (*execFrame, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if int64(n) > int64(max) {
		return nil, fmt.Errorf("executor frame of %d bytes is over the limit of %d", n, max)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	var f execFrame
	if err := json.Unmarshal(body, &f); err != nil {
		return nil, fmt.Errorf("executor frame: %v", err)
	}
	return &f, nil
}

// codeResult turns a result frame into a CodeResult: base64 images become
// bytes, and representations are dropped (largest first, text/plain last)
// until the bundle is within limit bytes.
func codeResult(f *execFrame, limit int) *sandpodv1.CodeResult {
	b64 := map[string]bool{}
	for _, m := range f.B64 {
		b64[m] = true
	}
	res := &sandpodv1.CodeResult{Data: map[string][]byte{}, IsMainResult: f.Main}
	total := 0
	for mime, v := range f.Data {
		if mime == "" || len(mime) > 128 {
			res.Truncated = true
			continue
		}
		b := []byte(v)
		if b64[mime] {
			dec, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				res.Truncated = true
				continue
			}
			b = dec
		}
		res.Data[mime] = b
		total += len(mime) + len(b)
	}
	if total <= limit {
		return res
	}
	mimes := make([]string, 0, len(res.Data))
	for m := range res.Data {
		mimes = append(mimes, m)
	}
	sort.Slice(mimes, func(i, j int) bool {
		pi, pj := mimes[i] == "text/plain", mimes[j] == "text/plain"
		if pi != pj {
			return pj // text/plain is dropped last
		}
		return len(res.Data[mimes[i]]) > len(res.Data[mimes[j]])
	})
	for _, m := range mimes {
		if total <= limit {
			break
		}
		total -= len(m) + len(res.Data[m])
		delete(res.Data, m)
		res.Truncated = true
	}
	return res
}

// resultSize is what a result counts against a cell's limit.
func resultSize(r *sandpodv1.CodeResult) int {
	n := 0
	for m, b := range r.GetData() {
		n += len(m) + len(b)
	}
	return n
}

func cutText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return s[:max] + fmt.Sprintf("\n… (%d bytes cut)", len(s)-max)
}

// markerScanner finds a cell's end marker in an output stream, which may
// split it across reads. Bytes that could be the start of the marker are
// held back until the next read tells.
type markerScanner struct {
	marker []byte
	held   []byte
}

// feed returns the output before the marker (or all of it that surely is
// not marker), whether the marker was found, and what followed it (output
// written after the cell ended, e.g. by a background thread).
func (m *markerScanner) feed(chunk []byte) (out []byte, found bool, rest []byte) {
	buf := append(m.held, chunk...)
	m.held = nil
	if i := bytes.Index(buf, m.marker); i >= 0 {
		return buf[:i], true, buf[i+len(m.marker):]
	}
	// Hold back the longest tail that is a prefix of the marker.
	for k := min(len(m.marker)-1, len(buf)); k > 0; k-- {
		if bytes.HasPrefix(m.marker, buf[len(buf)-k:]) {
			m.held = append([]byte(nil), buf[len(buf)-k:]...)
			return buf[:len(buf)-k], false, nil
		}
	}
	return buf, false, nil
}

// flush returns what is held back (the stream ended or the marker is not
// coming).
func (m *markerScanner) flush() []byte {
	h := m.held
	m.held = nil
	return h
}
