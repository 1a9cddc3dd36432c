package task

import (
	"testing"

	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/vault"
)

// The external tests in this directory (package task_test) check the
// packages built on the task agents (evolution) with real wakes: the
// chaos rig, through these.

// Rig is the chaos rig, for external tests.
type Rig struct{ c *chaosRig }

// NewRig makes a chaos rig with the usual timeout.
func NewRig(t *testing.T) *Rig { return &Rig{newChaosRig(t, hangTimeout)} }

func (r *Rig) Vault() *vault.Vault   { return r.c.v }
func (r *Rig) Fake() *llmtest.Ollama { return r.c.fake }
func (r *Rig) Config() llm.Config    { return r.c.cfg }
func (r *Rig) Runtime() *Runtime     { return r.c.rt }
func (r *Rig) SetModel(m llm.Model)  { r.c.rt.model = m }
func (r *Rig) Wake(t *testing.T) Run { return r.c.wake(t) }

// GoodReport is an update_report call that completes a wake; ChaosTask
// is the rig's task.
var GoodReport = goodReport

const ChaosTask = chaosTask
