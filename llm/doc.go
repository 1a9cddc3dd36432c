// Package llm owns margin's conversations with language models: the
// provider clients (Ollama through its own api package, any
// OpenAI-compatible endpoint, Anthropic), the mapping of agent roles to a
// provider and model through tiers, the retry → fallback → unavailable
// cascade, structured output validated against JSON schemas generated from
// Go types, the tool-call loop, embeddings (the embed role, [Client.Embed]),
// per-call accounting and health probes for `margin doctor`.
//
// It must not import margin's server, agents or vault packages, and it must
// not read configuration files, flags or the environment: callers fill a
// [Config] (cmd does so from viper, expanding ${VAR} keys and honouring
// OLLAMA_HOST) and pass it to [New]. It must not persist anything either:
// accounting goes to an injected [Recorder].
//
// The Ollama client is pinned by go.mod to github.com/ollama/ollama v0.17.4.
// Since v0.14 tool-call arguments and tool properties are ordered maps
// (api.ToolCallFunctionArguments, api.ToolPropertiesMap) rather than plain
// Go maps; the conversions in ollama.go rely on that to keep argument and
// property order as the model and the schema gave it, so revisit them when
// moving the pin.
package llm
