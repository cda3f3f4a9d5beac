// Package goclient tests the Go client (clients/go) against the real
// `sandpod serve`. The tests live here, in the root module, and not in the
// client's own module, which must not depend on the server (the root
// module and all it requires) even for its tests; clients/go keeps the
// unit tests, which use an in-process fake, and its examples, which
// TestExamples runs against the server here.
package goclient
