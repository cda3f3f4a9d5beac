package httpapi

import (
	"net"
	"net/http"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/api/errinfo"
)

// Browsers are callers too, and not always the user's own: any web page
// the user opens can send requests to 127.0.0.1:50052. Two rules keep such
// a page from using a local server that has no tokens:
//
//   - A request with an Origin header (browsers send it on every
//     cross-origin request, and on every POST, PUT and DELETE) is refused
//     unless its origin is allowed (--http-allow-origin), which also turns
//     on CORS for it. Without this, a page could create a sandbox of a
//     name it chose and run commands in it ("simple" requests need no
//     preflight), never reading an answer.
//   - A server without authentication answers only requests whose Host is
//     an IP address or localhost: a page on a domain that it re-points at
//     127.0.0.1 (DNS rebinding) is same-origin to itself and could read the
//     answers otherwise.
//
// With tokens, a browser page cannot authenticate without being handed
// one (browsers add no Authorization header on their own), and the Host
// rule is off (a cluster's bridge is reached by its Service name).

// checkBrowser applies the rules; it answers preflights and refusals itself
// and returns false then.
func (s *Server) checkBrowser(w http.ResponseWriter, r *http.Request) bool {
	if s.opts.Open && !LocalHost(r.Host) {
		writeStatus(w, status.Convert(errinfo.Newf(codes.PermissionDenied, errinfo.ReasonHostNotAllowed,
			"Host %q: a server without tokens answers only requests to an IP address or localhost (a guard against DNS rebinding); give it --token-file to be reached by name", r.Host)).Proto(), http.StatusForbidden)
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	if !slices.Contains(s.opts.AllowedOrigins, origin) && !slices.Contains(s.opts.AllowedOrigins, "*") {
		writeStatus(w, status.Convert(errinfo.Newf(codes.PermissionDenied, errinfo.ReasonOriginNotAllowed,
			"a request from a web page (Origin %q) is refused: the server allows none but those of --http-allow-origin", origin)).Proto(), http.StatusForbidden)
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Grpc-Timeout")
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return false
	}
	return true
}

// LocalHost says whether a Host header names this machine by address or
// as localhost.
func LocalHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	return net.ParseIP(host) != nil || strings.EqualFold(host, "localhost")
}
