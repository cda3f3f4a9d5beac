package preview

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Pure decisions of port previews: the host label that names an
// exposure, and the signature of a signed preview URL.

// SigParam is the query parameter of a signed preview URL; the proxy takes
// it off before the request reaches the sandbox.
const SigParam = "sandpod_preview_sig"

// previewCookie carries a verified signature after the first visit. It
// has no Domain attribute, so the browser sends it only to that one
// preview host, never to the API or to another sandbox's preview.
const previewCookie = "sandpod_preview"

var (
	errSigMalformed = errors.New("the preview signature is malformed (the link was cut or edited)")
	errSigBad       = errors.New("the preview signature does not match (the link was edited, was made for another port or exposure, or the server's preview key changed); ask for a new link with ExposePort")
	errSigExpired   = errors.New("the preview link has expired; ask for a new one (UnexposePort, then ExposePort)")
)

// newExposureID is the random part of a preview host: 16 base32 letters
// (80 bits), lower case so that it is a valid, case-insensitive DNS label.
func newExposureID() string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// previewLabel is the first DNS label of a preview host: p<port>-<id>.
func previewLabel(port int32, id string) string { return fmt.Sprintf("p%d-%s", port, id) }

// parsePreviewHost finds the exposure a Host header names: its first label
// must be p<port>-<id>. The rest of the host (the preview domain) is the
// operator's business.
func parsePreviewHost(host string) (port int32, id string, ok bool) {
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.Contains(host[i:], "]") {
		host = host[:i]
	}
	label, _, _ := strings.Cut(strings.ToLower(host), ".")
	rest, found := strings.CutPrefix(label, "p")
	if !found {
		return 0, "", false
	}
	ps, id, found := strings.Cut(rest, "-")
	if !found || id == "" || len(id) > 32 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyz234567") != "" {
		return 0, "", false
	}
	p, err := strconv.Atoi(ps)
	if err != nil || p < 1 || p > 65535 || strconv.Itoa(p) != ps {
		return 0, "", false
	}
	return int32(p), id, true
}

// previewURL puts a host label into the operator's URL template, where
// "*" stands for the label (http://*.preview.localhost:50053).
func previewURL(template, label string) string {
	return strings.Replace(template, "*", label, 1) + "/"
}

// signPreview signs an exposure (its id, sandbox, uid and port) until exp.
// The id is random per exposure, so unexposing a port voids its links.
func signPreview(key []byte, e *exposure, exp time.Time) string {
	unix := strconv.FormatInt(exp.Unix(), 10)
	return unix + "." + base64.RawURLEncoding.EncodeToString(previewMAC(key, e, unix))
}

func previewMAC(key []byte, e *exposure, unix string) []byte {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "sandpod-preview-v1\x00%s\x00%s\x00%s\x00%s\x00%d\x00%s", e.ID, e.Namespace, e.Sandbox, e.UID, e.Port, unix)
	return m.Sum(nil)
}

// verifyPreview checks a signature made by signPreview, and returns its
// expiry. The MAC is checked before the time, so an edited expiry reads as
// tampering, not as expired.
func verifyPreview(key []byte, e *exposure, sig string, now time.Time) (time.Time, error) {
	unix, mac, ok := strings.Cut(sig, ".")
	if !ok || len(unix) > 20 || len(mac) > 64 {
		return time.Time{}, errSigMalformed
	}
	secs, err := strconv.ParseInt(unix, 10, 64)
	if err != nil {
		return time.Time{}, errSigMalformed
	}
	got, err := base64.RawURLEncoding.DecodeString(mac)
	if err != nil {
		return time.Time{}, errSigMalformed
	}
	if !hmac.Equal(got, previewMAC(key, e, unix)) {
		return time.Time{}, errSigBad
	}
	exp := time.Unix(secs, 0)
	if !now.Before(exp) {
		return exp, errSigExpired
	}
	return exp, nil
}
