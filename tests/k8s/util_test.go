package k8s_test

import (
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/controller"
)

type clientObject = client.Object

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

func optsAgent(image string) controller.Options { return controller.Options{AgentImage: image} }

type corevar = corev1.EnvVar

func isAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }
