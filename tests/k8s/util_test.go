package k8s_test

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/controller"
)

type clientObject = client.Object

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

func optsAgent(image string) controller.Options { return controller.Options{AgentImage: image} }
