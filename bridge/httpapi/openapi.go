package httpapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

// openapiExtra completes the generated document: its info and security,
// the error fields writeError adds (status, reason), and the routes
// written here (exec, files/content), which protoc-gen-openapiv2 cannot
// see. Each route is served under /v1 and /v1/namespaces/{namespace}.
//
//go:embed openapi_extra.json
var openapiExtra []byte

// openAPI returns the served document: generated plus openapiExtra.
func openAPI(generated []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(generated, &doc); err != nil {
		return nil, fmt.Errorf("generated OpenAPI document: %w", err)
	}
	var extra struct {
		Info                json.RawMessage                      `json:"info"`
		SecurityDefinitions json.RawMessage                      `json:"securityDefinitions"`
		Security            json.RawMessage                      `json:"security"`
		StatusProperties    map[string]any                       `json:"statusProperties"`
		Operations          map[string]map[string]map[string]any `json:"operations"`
	}
	if err := json.Unmarshal(openapiExtra, &extra); err != nil {
		return nil, fmt.Errorf("openapi_extra.json: %w", err)
	}
	doc["info"] = extra.Info
	doc["securityDefinitions"] = extra.SecurityDefinitions
	doc["security"] = extra.Security
	defs, _ := doc["definitions"].(map[string]any)
	st, _ := defs["Status"].(map[string]any)
	props, _ := st["properties"].(map[string]any)
	if props == nil {
		return nil, fmt.Errorf("generated OpenAPI document has no definitions.Status.properties")
	}
	for k, v := range extra.StatusProperties {
		props[k] = v
	}
	paths, _ := doc["paths"].(map[string]any)
	if paths == nil {
		return nil, fmt.Errorf("generated OpenAPI document has no paths")
	}
	for suffix, ops := range extra.Operations {
		plain, namespaced := map[string]any{}, map[string]any{}
		for method, op := range ops {
			plain[method] = withParam(op, "", map[string]any{"name": "namespace", "in": "query", "type": "string", "description": "Empty means \"default\"."})
			namespaced[method] = withParam(op, "_Namespaced", map[string]any{"name": "namespace", "in": "path", "required": true, "type": "string"})
		}
		paths["/v1"+suffix] = plain
		paths["/v1/namespaces/{namespace}"+suffix] = namespaced
	}
	// An error answer is {"error": Status} (errorBody), a stream's last
	// line as much as a whole answer.
	defs["Error"] = map[string]any{
		"type":        "object",
		"description": "Every error answer: {\"error\": {...}}, with the HTTP status of the gRPC code (413 for a body over its limit).",
		"properties":  map[string]any{"error": map[string]any{"$ref": "#/definitions/Status"}},
	}
	for _, methods := range paths {
		ops, _ := methods.(map[string]any)
		for _, op := range ops {
			responses, _ := op.(map[string]any)["responses"].(map[string]any)
			for code, r := range responses {
				resp, _ := r.(map[string]any)
				schema, _ := resp["schema"].(map[string]any)
				if code != "200" && schema["$ref"] == "#/definitions/Status" {
					resp["schema"] = map[string]any{"$ref": "#/definitions/Error"}
				}
			}
		}
	}
	return json.MarshalIndent(doc, "", "  ")
}

// withParam copies op with one more parameter and an operationId suffix.
func withParam(op map[string]any, idSuffix string, param map[string]any) map[string]any {
	out := make(map[string]any, len(op))
	for k, v := range op {
		out[k] = v
	}
	params, _ := op["parameters"].([]any)
	out["parameters"] = append(append([]any{}, params...), param)
	if id, ok := op["operationId"].(string); ok {
		out["operationId"] = id + idSuffix
	}
	return out
}
