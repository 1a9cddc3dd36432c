// Package wire converts margin's domain values (agents/, vault/, the
// workspace's embedding status) to the editor protocol's wire types
// (server/protocol) and back, one function per type, field by field. It
// is the one place the two meet: the server and the MCP server both
// answer through it. A domain field renamed or removed breaks the build
// here, not the editors; its tests pin the JSON each conversion writes
// and fail for a domain field no conversion carries.
//
// A conversion keeps a nil slice nil, as the protocol says such a field
// may be null.
package wire

// list converts each of xs, keeping nil as nil.
func list[T, U any](xs []T, convert func(T) U) []U {
	if xs == nil {
		return nil
	}
	out := make([]U, len(xs))
	for i, x := range xs {
		out[i] = convert(x)
	}
	return out
}
