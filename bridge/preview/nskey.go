package preview

// nsKey names a sandbox in the bridge's maps; "" is the default namespace.
func nsKey(ns, name string) string {
	if ns == "" {
		ns = "default"
	}
	return ns + "/" + name
}
