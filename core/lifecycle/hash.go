package lifecycle

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// TemplateHash is a short stable hash of a template spec. Pool members carry
// the hash they were made with; a different hash means the template changed
// and the member rolls.
func TemplateHash(spec any) string {
	b, err := json.Marshal(spec)
	if err != nil {
		// Specs are plain API structs; Marshal cannot fail on them.
		panic("lifecycle: template spec does not marshal: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}
