// Package query answers questions about the vault and turns free-form log
// lines into daily-note entries: the multi-agent flow of seed 003 (Router,
// Planner, Retriever, Analyzer, Synthesizer, Evaluator, Clarifier, Parser,
// Observer), its state machine, clarification sessions persisted in the
// state database, the parsed data of logged entries, the domain modules of
// Margin/Domains and the global context in Margin/Context.md.
//
// The flow is plain Go (flow.go): a loop over states in which each state's
// step does its work and names the next state, and every transition is
// recorded on the session for inspection. Each model-backed agent asks for
// structured output validated against a schema generated from its Go type
// (llm.Structured); the Retriever runs the Planner's instructions against the
// index without a model call.
//
// It owns the tables it migrates (component "query") and the files it writes
// (daily-note entries, Margin/Context.md, Margin/Context Archive.md). It must
// not import margin's server package, must not read flags, config files or the
// environment (cmd fills Options), and must not write anything the user did
// not ask for: a query writes nothing to the vault but the global context, and
// only a LOG, BOTH or CORRECTION input appends to a daily note.
package query
