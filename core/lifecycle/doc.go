// Package lifecycle holds sandpod's lifecycle decisions as pure functions:
// what phase a sandbox is in, when it expires or idles out, how many warm pool
// members to create or delete, and which warm member a claim takes. The
// Kubernetes controller and the local engine both call these and only act on
// the answers; nothing here does I/O or reads the clock.
package lifecycle
