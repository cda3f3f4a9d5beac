package main

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// helmLabels are the labels the chart adds to every object and pod template
// for Helm's own bookkeeping (which release, which chart version). They
// have no place in a plain kubectl install, so they are not compared.
var helmLabels = []string{
	"helm.sh/chart",
	"app.kubernetes.io/managed-by",
	"app.kubernetes.io/instance",
	"app.kubernetes.io/version",
}

// NormalizeInstall drops from install.yaml what Helm does not make:
//   - the Namespace: Helm installs into a namespace it is given
//     (`helm install -n sandpod-system --create-namespace`), it does not own it.
func NormalizeInstall(objs []map[string]any) []map[string]any {
	var out []map[string]any
	for _, o := range objs {
		if str(o, "kind") == "Namespace" {
			continue
		}
		out = append(out, o)
	}
	return out
}

// NormalizeChart drops from the chart's output what install.yaml does not
// have, and Helm's labels:
//   - the Secret sandpod-bridge-preview-key: Helm makes it at install with a
//     random key (previewkey.yaml); install.yaml's reader creates it by hand,
//     a file applied by kubectl cannot make a random key once and keep it;
//   - Helm hooks (annotated helm.sh/hook: the pre-delete uninstall check,
//     the test): Helm runs them around an install, upgrade, uninstall or
//     test and deletes them; they are never part of the installed release,
//     and kubectl has no such moment to run them at (deploy/uninstall.sh is
//     install.yaml's uninstall check). hooks_test.go checks them instead;
//   - helmLabels, on objects and on pod templates;
//   - the annotation helm.sh/resource-policy (what `helm uninstall` keeps:
//     Helm's own instruction, nothing kubectl reads).
func NormalizeChart(objs []map[string]any) []map[string]any {
	var out []map[string]any
	for _, o := range objs {
		if str(o, "kind") == "Secret" && str(o, "metadata", "name") == "sandpod-bridge-preview-key" {
			continue
		}
		if str(o, "metadata", "annotations", "helm.sh/hook") != "" {
			continue
		}
		dropLabels(o, "metadata", "labels")
		dropLabels(o, "spec", "template", "metadata", "labels")
		if ann, ok := get(o, "metadata", "annotations").(map[string]any); ok {
			delete(ann, "helm.sh/resource-policy")
			if len(ann) == 0 {
				delete(get(o, "metadata").(map[string]any), "annotations")
			}
		}
		out = append(out, o)
	}
	return out
}

func dropLabels(o map[string]any, path ...string) {
	labels, ok := get(o, path...).(map[string]any)
	if !ok {
		return
	}
	for _, l := range helmLabels {
		delete(labels, l)
	}
	if len(labels) == 0 { // e.g. the controller's ClusterRole: no labels at all
		parent, _ := get(o, path[:len(path)-1]...).(map[string]any)
		delete(parent, path[len(path)-1])
	}
}

// Key names an object: kind/namespace/name (namespace empty when cluster-wide).
func Key(o map[string]any) string {
	return str(o, "kind") + "/" + str(o, "metadata", "namespace") + "/" + str(o, "metadata", "name")
}

// Compare lists, sorted, what differs between two sets of objects: objects
// on one side only, and each differing field of objects on both.
func Compare(install, chart []map[string]any) []string {
	a, b := index(install), index(chart)
	var diffs []string
	for k, ao := range a {
		bo, ok := b[k]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("- %s: only in install.yaml", k))
			continue
		}
		diffs = append(diffs, fieldDiffs(k, "", ao, bo)...)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("+ %s: only in the chart", k))
		}
	}
	sort.Strings(diffs)
	return diffs
}

func index(objs []map[string]any) map[string]map[string]any {
	m := make(map[string]map[string]any, len(objs))
	for _, o := range objs {
		m[Key(o)] = o
	}
	return m
}

// fieldDiffs walks maps by key and lists by position; anything else is
// compared as a value.
func fieldDiffs(key, path string, a, b any) []string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		var out []string
		for k := range union(am, bm) {
			out = append(out, fieldDiffs(key, path+"."+k, am[k], bm[k])...)
		}
		return out
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		var out []string
		for i := range al {
			out = append(out, fieldDiffs(key, fmt.Sprintf("%s[%d]", path, i), al[i], bl[i])...)
		}
		return out
	}
	if reflect.DeepEqual(a, b) {
		return nil
	}
	return []string{fmt.Sprintf("%s %s: - %s + %s", key, strings.TrimPrefix(path, "."), show(a), show(b))}
}

func union(a, b map[string]any) map[string]struct{} {
	u := make(map[string]struct{}, len(a)+len(b))
	for k := range a {
		u[k] = struct{}{}
	}
	for k := range b {
		u[k] = struct{}{}
	}
	return u
}

func show(v any) string {
	if v == nil {
		return "(absent)"
	}
	s := fmt.Sprintf("%v", v)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

func get(o map[string]any, path ...string) any {
	var cur any = o
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func str(o map[string]any, path ...string) string {
	s, _ := get(o, path...).(string)
	return s
}
