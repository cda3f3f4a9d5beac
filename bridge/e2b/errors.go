package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"connectrpc.com/connect"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errorJSON is E2B's error body: {"code": 404, "message": "..."}; the
// SDK shows the message and maps the status to its exceptions.
type errorJSON struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, errorJSON{Code: code, Message: msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// httpCode is the HTTP status E2B's API answers for a gRPC code: the SDK
// turns 404 into SandboxNotFoundException, 401 into
// AuthenticationException, 429 into RateLimitException, 409 (pause of a
// paused sandbox) into "already paused", 400 into InvalidArgument.
var httpCode = map[codes.Code]int{
	codes.InvalidArgument:    http.StatusBadRequest,
	codes.FailedPrecondition: http.StatusBadRequest,
	codes.OutOfRange:         http.StatusBadRequest,
	codes.Unauthenticated:    http.StatusUnauthorized,
	codes.PermissionDenied:   http.StatusForbidden,
	codes.NotFound:           http.StatusNotFound,
	codes.AlreadyExists:      http.StatusConflict,
	codes.Aborted:            http.StatusConflict,
	codes.ResourceExhausted:  http.StatusTooManyRequests,
	codes.Unimplemented:      http.StatusNotImplemented,
	codes.Unavailable:        http.StatusServiceUnavailable,
	codes.DeadlineExceeded:   http.StatusGatewayTimeout,
	codes.Canceled:           499,
}

// writeStatus answers a gRPC error of the API with its HTTP status and
// message.
func writeStatus(w http.ResponseWriter, err error) {
	st := status.Convert(err)
	code, ok := httpCode[st.Code()]
	if !ok {
		code = http.StatusInternalServerError
	}
	writeError(w, code, st.Message())
}

// connectError is a gRPC error of the API as a Connect error (the codes
// are the same numbers); an error that already is one passes.
func connectError(err error) error {
	if err == nil {
		return nil
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	case errors.Is(err, context.Canceled):
		return connect.NewError(connect.CodeCanceled, err)
	}
	st := status.Convert(err)
	return connect.NewError(connect.Code(st.Code()), errors.New(st.Message()))
}

// unsupported is the Connect answer for what sandpod does not have.
func unsupported(what string) error {
	return connect.NewError(connect.CodeUnimplemented, errors.New(what+" is not supported by sandpod"))
}
