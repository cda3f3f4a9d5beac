package mcp

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// sandboxDoc describes every tool's optional `sandbox` argument.
const sandboxDoc = "Name of the sandbox to act on. Leave it out to use this session's sandbox (claimed on the first call that names none, deleted when the session ends)."

// addTools registers every tool. Each tool's file holds its arguments,
// its result and its handler.
func (s *Server) addTools() {
	s.addClaim()
	s.addList()
	s.addDelete()
	s.addRunCommand()
	s.addRunCode()
	s.addReadFile()
	s.addWriteFile()
	s.addListFiles()
	s.addExposePort()
	s.addSnapshot()
	s.addRestore()
	s.addFork()
}

// bound is a numeric argument's range and default.
type bound struct {
	min, max float64
	def      any // nil: no default
}

// inputSchema is In's schema (descriptions from the jsonschema tags) with
// the ranges, defaults and choices the tags cannot say.
func inputSchema[In any](bounds map[string]bound, enums map[string][]any) *jsonschema.Schema {
	sc, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("the input schema of %T: %v", *new(In), err))
	}
	if p, ok := sc.Properties["sandbox"]; ok && p.Description == "" {
		p.Description = sandboxDoc
	}
	for _, p := range sc.Properties {
		notNull(p)
	}
	for name, b := range bounds {
		p := mustProperty(sc, name)
		p.Minimum, p.Maximum = jsonschema.Ptr(b.min), jsonschema.Ptr(b.max)
		if b.def != nil {
			p.Default = mustJSON(b.def)
		}
	}
	for name, values := range enums {
		p := mustProperty(sc, name)
		p.Enum = values
		p.Default = mustJSON(values[0])
	}
	return sc
}

// notNull drops the "null" jsonschema infers for a slice or a map: an
// optional argument is left out, not null.
func notNull(p *jsonschema.Schema) {
	if len(p.Types) == 2 && slices.Contains(p.Types, "null") {
		p.Type = p.Types[0]
		if p.Type == "null" {
			p.Type = p.Types[1]
		}
		p.Types = nil
	}
}

func mustProperty(sc *jsonschema.Schema, name string) *jsonschema.Schema {
	p, ok := sc.Properties[name]
	if !ok {
		panic(fmt.Sprintf("schema has no property %q", name))
	}
	return p
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// addTool registers a tool whose handler cannot crash the server, with
// the output schema of Out.
func addTool[In, Out any](s *Server, t *sdk.Tool, h sdk.ToolHandlerFor[In, Out]) {
	out, err := jsonschema.For[Out](nil)
	if err != nil {
		panic(fmt.Sprintf("the output schema of %s: %v", t.Name, err))
	}
	if p, ok := out.Properties["sandbox"]; ok && p.Description == "" {
		p.Description = "The sandbox this call used."
	}
	t.OutputSchema = out
	sdk.AddTool(s.mcp, t, safe(s.log, t.Name, h))
}

func ptr[T any](v T) *T { return &v }

// Annotations for the hosts that show or gate tools by them.
var (
	readOnly    = &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}
	additive    = &sdk.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}
	destructive = &sdk.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}
)
