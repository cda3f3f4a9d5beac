package preview

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// The preview listener: a reverse proxy from p<port>-<id>.<preview domain>
// to a port inside a sandbox, through the agent's Dial tunnel. It is a
// listener of its own, never the API's: a page served by the sandbox's
// (untrusted) code must not share an origin with the API, nor with another
// sandbox's preview (each exposure is a host of its own).

type exposureKey struct{}

type previewHandler struct {
	s      *Server
	authns []Authenticate
	proxy  *httputil.ReverseProxy
}

// Authenticate is one of the API's authenticators: whether it knows token
// (a token it does not know leaves it to the next) and, if it does, the
// caller's namespace check (nil: every namespace).
type Authenticate func(ctx context.Context, token string) (known bool, allow func(ctx context.Context, ns string) error, err error)

// PreviewHandler serves the previews of s with the API's authenticators.
func (s *Server) PreviewHandler(authns []Authenticate) http.Handler {
	h := &previewHandler{s: s, authns: authns}
	h.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			e := pr.In.Context().Value(exposureKey{}).(*exposure)
			// The transport dials by exposure id; Host stays the preview
			// host, which servers that check Origin against Host (Jupyter's
			// WebSockets) need.
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", e.ID
			pr.SetXForwarded()
		},
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
				id, _, _ := net.SplitHostPort(addr)
				e := s.lookupExposure(ctx, id)
				if e == nil {
					return nil, errors.New("the preview was closed")
				}
				return s.dialPort(ctx, e.Namespace, e.Sandbox, e.Port)
			},
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     60 * time.Second,
		},
		FlushInterval: -1, // stream: server-sent events, logs, downloads
		ModifyResponse: func(r *http.Response) error {
			hostOnlyCookies(r.Header)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			e := r.Context().Value(exposureKey{}).(*exposure)
			if errors.Is(err, errPortClosed) {
				previewError(w, http.StatusBadGateway, fmt.Sprintf("sandbox %q: nothing listens on port %d (connection refused)", e.Sandbox, e.Port))
				return
			}
			if errors.Is(err, context.Canceled) {
				return // the browser went away
			}
			previewError(w, http.StatusBadGateway, fmt.Sprintf("sandbox %q port %d: %v", e.Sandbox, e.Port, err))
		},
	}
	return h
}

func previewError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
}

func (h *previewHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	port, id, ok := parsePreviewHost(r.Host)
	if !ok {
		previewError(w, http.StatusNotFound, "not a preview host: a preview URL looks like http://p<port>-<id>.<preview domain>/ (from ExposePort)")
		return
	}
	e := h.s.lookupExposure(r.Context(), id)
	if e == nil || e.Port != port {
		previewError(w, http.StatusNotFound, "no such preview: it was never exposed, was unexposed, or its sandbox was suspended or deleted")
		return
	}
	if !h.authorize(w, r, e) {
		return
	}
	if !h.alive(w, r, e) {
		return
	}
	ctx := context.WithValue(r.Context(), exposureKey{}, e)
	if e.Protocol == sandpodv1.PortProtocol_PORT_PROTOCOL_TCP {
		h.serveTCP(w, r.WithContext(ctx), e)
		return
	}
	h.proxy.ServeHTTP(w, r.WithContext(ctx))
}

// alive answers 410 Gone (and forgets the exposure) when the sandbox was
// deleted, replaced or stopped behind the bridge's back (idle suspend,
// expiry, another bridge replica).
func (h *previewHandler) alive(w http.ResponseWriter, r *http.Request, e *exposure) bool {
	sb, err := h.s.backend.GetSandbox(r.Context(), e.Namespace, e.Sandbox)
	switch {
	case status.Code(err) == codes.NotFound || (err == nil && sb.GetUid() != e.UID):
		h.s.previews.closeSandbox(e.Namespace, e.Sandbox)
		previewError(w, http.StatusGone, fmt.Sprintf("sandbox %q was deleted; its previews are closed", e.Sandbox))
		return false
	case err != nil:
		previewError(w, http.StatusServiceUnavailable, fmt.Sprintf("sandbox %q: %s", e.Sandbox, status.Convert(err).Message()))
		return false
	case sb.GetPhase() != sandpodv1.Phase_PHASE_RUNNING:
		h.s.previews.closeSandbox(e.Namespace, e.Sandbox)
		h.s.previews.forgetStored(r.Context(), e.Namespace, e.Sandbox)
		previewError(w, http.StatusGone, fmt.Sprintf("sandbox %q is %s; its previews were closed (resume it and expose the port again)", e.Sandbox, phaseWord(sb.GetPhase())))
		return false
	}
	return true
}

// authorize lets a request in by a signed URL (then a cookie for this one
// preview host), a signed cookie, or the caller's bearer token; with no
// authenticators configured (local, loopback) by nothing. A signed URL
// that is presented is always checked (403 if bad); a preview cookie that
// does not verify is ignored (another preview may have set it).
// Credentials meant for sandpod are taken off the request: the sandbox's
// code never sees them.
func (h *previewHandler) authorize(w http.ResponseWriter, r *http.Request, e *exposure) bool {
	key := h.s.previews.key()
	now := h.s.now()
	q := r.URL.Query()
	if q.Has(SigParam) {
		exp, err := verifyPreview(key, e, q.Get(SigParam), now)
		if err != nil {
			previewError(w, http.StatusForbidden, err.Error())
			return false
		}
		secure := r.TLS != nil
		http.SetCookie(w, &http.Cookie{
			Name: previewCookieName(secure), Value: q.Get(SigParam), Path: "/", Expires: exp,
			HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: secure,
		})
		q.Del(SigParam)
		r.URL.RawQuery = q.Encode()
		stripPreviewCookies(r)
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.Header.Get("Upgrade") == "" {
			// The page then loads without the signature in its address bar,
			// history or Referer headers.
			http.Redirect(w, r, r.URL.RequestURI(), http.StatusFound)
			return false
		}
		return true
	}
	// Every preview cookie the browser sent is tried: a page of another
	// preview can set one for the shared parent domain, which the browser
	// then sends beside this host's own, first or last. One that does not
	// verify for this exposure is ignored, never an answer: a tossed cookie
	// must not lock the user out.
	cookieOK, cookieErr := checkPreviewCookies(r, func(v string) error {
		_, err := verifyPreview(key, e, v, now)
		return err
	})
	stripPreviewCookies(r)
	if cookieOK {
		return true
	}
	if cookieErr != nil {
		// This host's own cookie, if it was the bad one (expired), goes.
		http.SetCookie(w, &http.Cookie{Name: previewCookieName(r.TLS != nil), Path: "/", MaxAge: -1, Secure: r.TLS != nil})
	}
	if len(h.authns) == 0 {
		return true
	}
	for _, v := range r.Header.Values("Authorization") {
		token, ok := strings.CutPrefix(v, "Bearer ")
		if !ok || token == "" {
			continue
		}
		for _, au := range h.authns {
			known, allow, err := au(r.Context(), token)
			if err != nil {
				previewError(w, http.StatusServiceUnavailable, status.Convert(err).Message())
				return false
			}
			if !known {
				continue
			}
			if allow != nil {
				if err := allow(r.Context(), e.Namespace); err != nil {
					previewError(w, http.StatusForbidden, status.Convert(err).Message())
					return false
				}
			}
			r.Header.Del("Authorization")
			return true
		}
	}
	msg := "this preview needs the caller's bearer token (Authorization: Bearer ...) or its signed URL (ExposePort's signed_url)"
	if cookieErr != nil {
		msg += "; the preview cookie the browser sent is not valid here (" + cookieErr.Error() + ")"
	}
	previewError(w, http.StatusUnauthorized, msg)
	return false
}

// hostOnlyCookies drops the Domain of every cookie a sandbox sets: with
// Domain=preview.localhost a page could plant cookies in every other
// preview (and in the operator's other hosts under that domain). A cookie
// that does not parse is dropped.
func hostOnlyCookies(h http.Header) {
	set := h.Values("Set-Cookie")
	if len(set) == 0 {
		return
	}
	h.Del("Set-Cookie")
	for _, line := range set {
		c, err := http.ParseSetCookie(line)
		if err != nil {
			continue
		}
		c.Domain = ""
		if v := c.String(); v != "" {
			h.Add("Set-Cookie", v)
		}
	}
}

// previewCookieName is the preview cookie's name: with TLS the __Host-
// prefix, which browsers accept only from this very host (Secure, Path=/,
// no Domain), so no other preview can set a cookie of that name for it.
func previewCookieName(secure bool) string {
	if secure {
		return "__Host-" + previewCookie
	}
	return previewCookie
}

// isPreviewCookie says whether a cookie name is one of sandpod's.
func isPreviewCookie(name string) bool {
	return name == previewCookie || name == previewCookieName(true)
}

// checkPreviewCookies tries every preview cookie of r with verify: ok if
// one passes, else the first failure (nil when there was none).
func checkPreviewCookies(r *http.Request, verify func(string) error) (ok bool, firstErr error) {
	for _, c := range r.Cookies() {
		if !isPreviewCookie(c.Name) {
			continue
		}
		err := verify(c.Value)
		if err == nil {
			return true, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return false, firstErr
}

// stripPreviewCookies takes sandpod's cookies off the request's Cookie
// headers: the sandbox's app never sees them.
func stripPreviewCookies(r *http.Request) {
	cookies := r.Cookies()
	r.Header.Del("Cookie")
	for _, c := range cookies {
		if !isPreviewCookie(c.Name) {
			r.AddCookie(c)
		}
	}
}

// serveTCP carries a raw TCP connection after an HTTP upgrade
// ("Connection: Upgrade", "Upgrade: tcp").
func (h *previewHandler) serveTCP(w http.ResponseWriter, r *http.Request, e *exposure) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "tcp") {
		previewError(w, http.StatusBadRequest, fmt.Sprintf("port %d is exposed as raw TCP: connect with an HTTP upgrade (Connection: Upgrade, Upgrade: tcp), e.g. through the Go client's DialPort", e.Port))
		return
	}
	conn, err := h.s.dialPort(r.Context(), e.Namespace, e.Sandbox, e.Port)
	if err != nil {
		previewError(w, http.StatusBadGateway, fmt.Sprintf("sandbox %q port %d: %v", e.Sandbox, e.Port, err))
		return
	}
	defer conn.Close()
	rc := http.NewResponseController(w)
	client, buf, err := rc.Hijack()
	if err != nil {
		previewError(w, http.StatusInternalServerError, "this connection cannot be upgraded")
		return
	}
	defer client.Close()
	_ = client.SetDeadline(time.Time{})
	if _, err := io.WriteString(client, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n"); err != nil {
		return
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(conn, buf.Reader) // the buffered bytes first, then the socket
		if cw, ok := conn.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
	}()
	_, _ = io.Copy(client, conn)
	_ = client.Close() // ends the copy above too
	_ = conn.Close()
	wg.Wait()
}
