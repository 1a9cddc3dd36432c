package server

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/margin-md/margin/server/protocol"
)

// TestMethodsAreTheProtocols holds the methods margin serves to the
// protocol package: the same names, and each handler decodes the params
// and returns the result the protocol names, so the TypeScript generated
// from it says what the server does.
func TestMethodsAreTheProtocols(t *testing.T) {
	var names []string
	for _, m := range protocol.Methods {
		names = append(names, m.Name)
		h, ok := methods[m.Name]
		if !ok {
			t.Errorf("protocol.Methods has %s, which the server does not serve", m.Name)
			continue
		}
		params := m.Params
		if params == nil {
			params = reflect.TypeFor[empty]()
		}
		if h.params != params || h.result != m.Result {
			t.Errorf("%s: the server takes %v and returns %v; protocol.Methods says %v and %v", m.Name, h.params, h.result, params, m.Result)
		}
	}
	slices.Sort(names)
	// A test build's fault methods (faults.go) are no part of the protocol.
	got := slices.DeleteFunc(methodNames(), func(n string) bool { return strings.HasPrefix(n, "margin/test.") })
	if !slices.Equal(got, names) {
		t.Errorf("the server announces %v; protocol.Methods has %v", got, names)
	}
}
