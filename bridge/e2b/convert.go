package e2b

import (
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"

	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// EnvdVersion is the envd version the front door reports: E2B's SDK turns
// features on by it (stdin control 0.3.0, default user 0.4.0, close stdin
// 0.5.2, octet-stream uploads 0.5.7, file metadata 0.6.2, watch events with
// entries 0.6.3), and all of those are served.
const EnvdVersion = "0.6.4"

// The home directories: E2B's user is "user" with home /home/user, where
// relative paths and commands start; a sandpod sandbox's home is
// /workspace (its writable, snapshotted tree).
const (
	e2bHome     = "/home/user"
	sandpodHome = "/workspace"
)

// metadataPrefix keeps E2B metadata apart from other labels of a sandbox:
// key k is the label metadata.e2b.dev/k.
const metadataPrefix = "metadata.e2b.dev/"

// defaultTemplates are the template names E2B's SDKs use when the caller
// names none (Sandbox: "base", the code interpreter: "code-interpreter-v1").
var defaultTemplates = map[string]bool{"": true, "base": true, "code-interpreter-v1": true}

// templateFor is the sandpod template an E2B templateID stands for: a
// default name is the front door's default template, any other the sandpod
// template of that name.
func templateFor(templateID, fallback string) string {
	if defaultTemplates[templateID] {
		return fallback
	}
	return templateID
}

// toSandpodPath maps a path as E2B's SDK sends it to the sandbox's: a
// relative path is under the home directory, /home/user is /workspace.
func toSandpodPath(p string) string {
	if p == "" {
		return sandpodHome
	}
	if !strings.HasPrefix(p, "/") {
		p = e2bHome + "/" + p
	}
	p = path.Clean(p)
	if p == e2bHome {
		return sandpodHome
	}
	if rest, ok := strings.CutPrefix(p, e2bHome+"/"); ok {
		return sandpodHome + "/" + rest
	}
	return p
}

// toE2BPath maps a sandbox path back to what E2B's SDK expects; the files
// API names a path in the workspace relative to it.
func toE2BPath(p string) string {
	if !strings.HasPrefix(p, "/") {
		p = sandpodHome + "/" + p
	}
	p = path.Clean(p)
	if p == sandpodHome {
		return e2bHome
	}
	if rest, ok := strings.CutPrefix(p, sandpodHome+"/"); ok {
		return e2bHome + "/" + rest
	}
	return p
}

// metadataLabels is E2B metadata as sandbox labels; sandpod's validation
// checks them (a value must be a valid label value).
func metadataLabels(md map[string]string) map[string]string {
	if len(md) == 0 {
		return nil
	}
	out := make(map[string]string, len(md))
	for k, v := range md {
		out[metadataPrefix+k] = v
	}
	return out
}

// metadataOf is a sandbox's E2B metadata, from its labels.
func metadataOf(labels map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		if name, ok := strings.CutPrefix(k, metadataPrefix); ok {
			out[name] = v
		}
	}
	return out
}

// metadataSelector is the label selector of a list's metadata filter, as
// the SDK sends it: a URL-encoded query of percent-encoded keys and values
// ("k1=v1&k2=v2").
func metadataSelector(query string) (string, error) {
	if query == "" {
		return "", nil
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", fmt.Errorf("metadata filter %q: %w", query, err)
	}
	var terms []string
	for k, vs := range q {
		key, err := url.QueryUnescape(k)
		if err != nil {
			return "", fmt.Errorf("metadata filter key %q: %w", k, err)
		}
		for _, v := range vs {
			val, err := url.QueryUnescape(v)
			if err != nil {
				return "", fmt.Errorf("metadata filter value %q: %w", v, err)
			}
			terms = append(terms, metadataPrefix+key+"="+val)
		}
	}
	sort.Strings(terms)
	return strings.Join(terms, ","), nil
}

// state is E2B's state of a sandbox: "paused" for a suspended or paused
// one, else "running".
func state(sb *sandpodv1.Sandbox) string {
	switch sb.GetPhase() {
	case sandpodv1.Phase_PHASE_SUSPENDED, sandpodv1.Phase_PHASE_PAUSED:
		return "paused"
	}
	return "running"
}

// sandboxJSON is a sandbox as E2B's API describes it (SandboxDetail and
// ListedSandbox; Sandbox on create and connect takes the fields it knows).
type sandboxJSON struct {
	TemplateID      string  `json:"templateID"`
	SandboxID       string  `json:"sandboxID"`
	ClientID        string  `json:"clientID"`
	Alias           string  `json:"alias,omitempty"`
	StartedAt       string  `json:"startedAt"`
	EndAt           string  `json:"endAt"`
	EnvdVersion     string  `json:"envdVersion"`
	EnvdAccessToken *string `json:"envdAccessToken,omitempty"`
	// TrafficAccessToken is the same key: E2B's code interpreter sends it
	// (and not the envd token) on its context calls.
	TrafficAccessToken *string           `json:"trafficAccessToken,omitempty"`
	CPUCount           int64             `json:"cpuCount"`
	MemoryMB           int64             `json:"memoryMB"`
	DiskSizeMB         int64             `json:"diskSizeMB"`
	State              string            `json:"state"`
	Metadata           map[string]string `json:"metadata"`
}

// describe is sb in E2B's terms; tpl is its template, when known, for the
// CPU and memory limits.
func describe(sb *sandpodv1.Sandbox, tpl *sandpodv1.Template, token *string) sandboxJSON {
	j := sandboxJSON{
		TemplateID:         sb.GetTemplate(),
		SandboxID:          sb.GetName(),
		ClientID:           "sandpod",
		Alias:              sb.GetTemplate(),
		StartedAt:          sb.GetCreateTime().AsTime().UTC().Format(time.RFC3339Nano),
		EndAt:              sb.GetShutdownTime().AsTime().UTC().Format(time.RFC3339Nano),
		EnvdVersion:        EnvdVersion,
		EnvdAccessToken:    token,
		TrafficAccessToken: token,
		State:              state(sb),
		Metadata:           metadataOf(sb.GetLabels()),
	}
	if sb.GetShutdownTime() == nil {
		j.EndAt = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC).Format(time.RFC3339Nano)
	}
	if tpl != nil {
		j.CPUCount = max((tpl.GetCpuLimitMillis()+999)/1000, 0)
		j.MemoryMB = tpl.GetMemoryLimitBytes() >> 20
	}
	return j
}
