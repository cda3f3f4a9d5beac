package bridge

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Claim metrics of the API, counted where every ClaimSandbox and
// CreateSandbox passes whichever backend serves it (the local engine of
// `sandpod serve`, or Kubernetes behind `sandpod bridge`). They are named
// sandpod_api_* and not after the controller's sandpod_claims_total: those
// time a SandboxClaim object from first seen to ready inside the
// controller, these time the RPC as its caller waits for it, and a
// dashboard summing both would count a bridge claim twice.
var (
	apiClaims = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandpod_api_claims_total",
		Help: "ClaimSandbox and CreateSandbox calls, by method, outcome (warm, cold or error), gRPC code, template and pool.",
	}, []string{"method", "outcome", "code", "template", "pool"})
	apiClaimDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sandpod_api_claim_duration_seconds",
		Help:    "Time to answer ClaimSandbox and CreateSandbox, by method and outcome (warm, cold or error).",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"method", "outcome"})

	metricsRegistry = func() *prometheus.Registry {
		r := prometheus.NewRegistry()
		r.MustRegister(apiClaims, apiClaimDuration,
			collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		return r
	}()
)

// MetricsHandler serves the API's metrics in the Prometheus text format.
func MetricsHandler() http.Handler {
	return promhttp.HandlerFor(metricsRegistry, promhttp.HandlerOpts{})
}

// claimLabels decides the labels of one claim or create. A failed call
// has no template or pool label: its names come from the caller and may
// name nothing, and a label per made-up name would let any caller grow
// the metrics without bound. A sandbox's template and pool exist, so
// there are only as many as the operator configured.
func claimLabels(sb *sandpodv1.Sandbox, warm bool, err error) (outcome, code, template, pool string) {
	if err != nil {
		return "error", errCode(err).String(), "", ""
	}
	outcome = "cold"
	if warm {
		outcome = "warm"
	}
	return outcome, codes.OK.String(), sb.GetTemplate(), sb.GetPool()
}

// errCode is the gRPC code a caller sees for err.
func errCode(err error) codes.Code {
	switch {
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	}
	return status.Code(err)
}

// observeClaim counts one ClaimSandbox or CreateSandbox that began at start.
func observeClaim(method string, start time.Time, sb *sandpodv1.Sandbox, warm bool, err error) {
	outcome, code, template, pool := claimLabels(sb, warm, err)
	apiClaims.WithLabelValues(method, outcome, code, template, pool).Inc()
	apiClaimDuration.WithLabelValues(method, outcome).Observe(time.Since(start).Seconds())
}
