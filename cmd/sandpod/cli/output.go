package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// The JSON and YAML shapes of -o json|yaml. Field names follow the API's
// JSON names (lowerCamelCase of the proto fields), so that they are stable
// and read the same as the HTTP API's; phases and policies are the Go
// client's words ("Running", "Delete"), durations are seconds ("300s"), and
// times RFC 3339 in UTC. Empty optional fields are left out.

type sandboxView struct {
	Name             string            `json:"name"`
	Namespace        string            `json:"namespace"`
	UID              string            `json:"uid,omitempty"`
	Template         string            `json:"template,omitempty"`
	Pool             string            `json:"pool,omitempty"`
	Labels           map[string]string `json:"labels,omitempty"`
	Phase            string            `json:"phase"`
	Message          string            `json:"message,omitempty"`
	Conditions       []conditionView   `json:"conditions,omitempty"`
	CreateTime       *time.Time        `json:"createTime,omitempty"`
	ShutdownTime     *time.Time        `json:"shutdownTime,omitempty"`
	ShutdownPolicy   string            `json:"shutdownPolicy,omitempty"`
	LastActivityTime *time.Time        `json:"lastActivityTime,omitempty"`
	IdleTimeout      string            `json:"idleTimeout,omitempty"`
	Claimed          bool              `json:"claimed"`
	EnvKeys          []string          `json:"envKeys,omitempty"`
	ServiceFQDN      string            `json:"serviceFqdn,omitempty"`
	AgentRestarts    int32             `json:"agentRestarts,omitempty"`
	// Warm is set by claim only: a warm pool member was adopted.
	Warm *bool `json:"warm,omitempty"`
}

type conditionView struct {
	Type               string     `json:"type"`
	Status             string     `json:"status"`
	Reason             string     `json:"reason,omitempty"`
	Message            string     `json:"message,omitempty"`
	LastTransitionTime *time.Time `json:"lastTransitionTime,omitempty"`
}

type templateView struct {
	Name             string `json:"name"`
	Namespace        string `json:"namespace"`
	Image            string `json:"image,omitempty"`
	RuntimeClassName string `json:"runtimeClassName,omitempty"`
	IdleTimeout      string `json:"idleTimeout,omitempty"`
	DefaultTTL       string `json:"defaultTtl,omitempty"`
	ShutdownPolicy   string `json:"shutdownPolicy,omitempty"`
	AutoResume       bool   `json:"autoResume"`
	NetworkIsolated  bool   `json:"networkIsolated"`
	MemoryLimitBytes int64  `json:"memoryLimitBytes,omitempty"`
	CPULimitMillis   int64  `json:"cpuLimitMillis,omitempty"`
	PIDsLimit        int64  `json:"pidsLimit,omitempty"`
	DiskLimitBytes   int64  `json:"diskLimitBytes,omitempty"`
	InodeLimit       int64  `json:"inodeLimit,omitempty"`
}

type poolView struct {
	Name            string `json:"name"`
	Namespace       string `json:"namespace"`
	Template        string `json:"template"`
	Replicas        int    `json:"replicas"`
	ReadyReplicas   int    `json:"readyReplicas"`
	PendingReplicas int    `json:"pendingReplicas"`
}

type eventView struct {
	Type    string      `json:"type"`
	Sandbox sandboxView `json:"sandbox"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// seconds renders a duration as the API's JSON does ("300s").
func seconds(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

func viewOf(i sandpod.Info) sandboxView {
	v := sandboxView{
		Name:             i.Name,
		Namespace:        i.Namespace,
		UID:              i.UID,
		Template:         i.Template,
		Pool:             i.Pool,
		Labels:           i.Labels,
		Phase:            string(i.Phase),
		Message:          i.Message,
		CreateTime:       timePtr(i.CreateTime),
		ShutdownTime:     timePtr(i.ShutdownTime),
		ShutdownPolicy:   string(i.ShutdownPolicy),
		LastActivityTime: timePtr(i.LastActivityTime),
		IdleTimeout:      seconds(i.IdleTimeout),
		Claimed:          i.Claimed,
		EnvKeys:          i.EnvKeys,
		ServiceFQDN:      i.ServiceFQDN,
		AgentRestarts:    i.AgentRestarts,
	}
	for _, c := range i.Conditions {
		v.Conditions = append(v.Conditions, conditionView{
			Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message,
			LastTransitionTime: timePtr(c.LastTransitionTime),
		})
	}
	return v
}

func templateViewOf(t sandpod.Template) templateView {
	return templateView{
		Name: t.Name, Namespace: t.Namespace, Image: t.Image, RuntimeClassName: t.RuntimeClassName,
		IdleTimeout: seconds(t.IdleTimeout), DefaultTTL: seconds(t.DefaultTTL), ShutdownPolicy: string(t.ShutdownPolicy),
		AutoResume: t.AutoResume, NetworkIsolated: t.NetworkIsolated,
		MemoryLimitBytes: t.MemoryLimitBytes, CPULimitMillis: t.CPULimitMillis, PIDsLimit: t.PIDsLimit,
		DiskLimitBytes: t.DiskLimitBytes, InodeLimit: t.InodeLimit,
	}
}

func poolViewOf(p sandpod.WarmPool) poolView {
	return poolView{
		Name: p.Name, Namespace: p.Namespace, Template: p.Template,
		Replicas: p.Replicas, ReadyReplicas: p.ReadyReplicas, PendingReplicas: p.PendingReplicas,
	}
}

// writeData prints v as JSON (indented) or YAML.
func writeData(w io.Writer, format string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if format == "yaml" {
		if b, err = yaml.JSONToYAML(b); err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// table writes aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)}
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		// A tab or newline in a value (a message) would break the columns.
		cells[i] = strings.NewReplacer("\t", " ", "\n", " ").Replace(c)
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// sandboxColumns are the columns of ls, get, claim... (wide adds some).
func sandboxHeader(wide bool) []string {
	h := []string{"NAME", "PHASE", "TEMPLATE", "POOL", "AGE", "SHUTDOWN"}
	if wide {
		h = append(h, "LABELS", "MESSAGE")
	}
	return h
}

func sandboxRow(i sandpod.Info, now time.Time, wide bool) []string {
	r := []string{i.Name, string(i.Phase), orDash(i.Template), orDash(i.Pool), age(i.CreateTime, now), until(i.ShutdownTime, now)}
	if wide {
		r = append(r, orDash(labelString(i.Labels)), orDash(i.Message))
	}
	return r
}

// age is how long ago t was, kubectl-style: 45s, 12m, 3h, 5d.
func age(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return shortDuration(now.Sub(t))
}

// until is when t comes: "in 29m", or "due" once passed; "-" for none.
func until(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := t.Sub(now)
	if d <= 0 {
		return "due"
	}
	return "in " + shortDuration(d)
}

func shortDuration(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
		fallthrough
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func labelString(l map[string]string) string {
	keys := slices.Sorted(maps.Keys(l))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}

// printSandboxes prints sandboxes in the chosen format; key is the JSON
// list's name ("sandboxes"). A single sandbox (get, claim, ...) prints as
// one object.
func (a *app) printSandboxes(format string, infos []sandpod.Info, single bool, warm *bool) error {
	switch format {
	case "json", "yaml":
		if single && len(infos) == 1 {
			v := viewOf(infos[0])
			v.Warm = warm
			return writeData(a.out, format, v)
		}
		views := make([]sandboxView, 0, len(infos))
		for _, i := range infos {
			views = append(views, viewOf(i))
		}
		return writeData(a.out, format, map[string]any{"sandboxes": views})
	case "name":
		for _, i := range infos {
			fmt.Fprintln(a.out, i.Name)
		}
		return nil
	}
	wide := format == "wide"
	t := newTable(a.out, sandboxHeader(wide)...)
	now := time.Now()
	for _, i := range infos {
		t.row(sandboxRow(i, now, wide)...)
	}
	return t.flush()
}

// writeLine prints v as one line of JSON (watch -o json).
func writeLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// streamTable prints rows as they come (watch), each at once: a column is
// as wide as its widest cell so far, at least its minimum, so that lines
// stay aligned without waiting for the rows to come.
type streamTable struct {
	w      io.Writer
	widths []int
}

func newStreamTable(w io.Writer, minWidths []int, header ...string) *streamTable {
	t := &streamTable{w: w, widths: make([]int, len(header))}
	copy(t.widths, minWidths)
	t.row(header...)
	return t
}

func (t *streamTable) row(cells ...string) {
	var b strings.Builder
	for i, c := range cells {
		c = strings.NewReplacer("\t", " ", "\n", " ").Replace(c)
		if i == len(cells)-1 || i >= len(t.widths) {
			b.WriteString(c)
			break
		}
		t.widths[i] = max(t.widths[i], len(c))
		b.WriteString(c)
		b.WriteString(strings.Repeat(" ", t.widths[i]-len(c)+3))
	}
	fmt.Fprintln(t.w, b.String())
}
