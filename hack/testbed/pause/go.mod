// The node bed's pause image (the pod sandbox's first process). Its own
// module so that `go build ./...`, `go vet ./...` and `go test ./...` at the
// repository root leave it alone; hack/testbed/images.sh builds it.
module sandpod.local/testbed/pause

go 1.26
