package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/margin-md/margin/server/editortest"
)

// rpcConn speaks margin serve's JSON-RPC over a started process's pipes,
// one call at a time; what the server sends besides replies is skipped.
type rpcConn struct {
	w  io.Writer
	r  *bufio.Reader
	id int
}

func newRPCConn(stdin io.Writer, stdout io.Reader) *rpcConn {
	return &rpcConn{w: stdin, r: bufio.NewReader(stdout)}
}

// call sends method with params and reads its reply into result (nil:
// the reply is only waited for).
func (c *rpcConn) call(method string, params, result any) error {
	c.id++
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if _, err := c.w.Write(editortest.Frame(body)); err != nil {
		return err
	}
	for {
		reply, err := editortest.ReadFrame(c.r)
		if err != nil {
			return err
		}
		var m struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		json.Unmarshal(reply, &m)
		if m.ID == nil || *m.ID != c.id {
			continue
		}
		if len(m.Error) > 0 {
			return fmt.Errorf("%s: %s", method, m.Error)
		}
		if result == nil {
			return nil
		}
		return json.Unmarshal(m.Result, result)
	}
}
