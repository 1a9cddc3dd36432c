// Package protocol holds margin's JSON-RPC request and result types (SPEC
// §6) in one place: the server decodes params into them and encodes
// results from them, the end-to-end tests speak through them, and the
// TypeScript plugins get them from gen, which writes one file of
// interfaces from the types reachable from Methods, EditorCommands and
// Notifications.
//
// Every type is declared here, and the package imports nothing of
// margin's: an agent, a change set or a search hit has a wire type of its
// own, which server/wire converts margin's domain values to, so a field
// renamed or added in agents/ or vault/ leaves the editors' protocol as
// it is (server/wire's tests fail until its conversion says where the
// field goes). Field names are the contract: json tags name them, and
// omitempty marks what a client may leave out or may not get.
package protocol

//go:generate go run ./gen -root ../..

import "reflect"

// A Method is one of margin's own methods (SPEC §6): its name and the
// types of its params and result. Params is nil for a method that takes
// none.
type Method struct {
	Name   string
	Params reflect.Type
	Result reflect.Type
}

func method[P, R any](name string) Method {
	return Method{Name: name, Params: reflect.TypeFor[P](), Result: reflect.TypeFor[R]()}
}

func noParams[R any](name string) Method {
	return Method{Name: name, Result: reflect.TypeFor[R]()}
}

// Methods are margin's own methods, besides the LSP ones, in SPEC's order;
// initialize announces their names so that a plugin can feature-detect.
var Methods = []Method{
	noParams[StatusResult]("vault/status"),
	method[CoverageParams, CoverageResult]("vault/coverage"),
	method[SearchParams, SearchResult]("vault/search"),
	noParams[RescanResult]("vault/rescan"),
	method[RelatedParams, RelatedResult]("vault/related"),

	method[AskParams, Answer]("query/ask"),
	method[ReplyParams, Answer]("query/reply"),
	method[LogParams, LogResult]("log/append"),
	noParams[ContextResult]("context/get"),

	method[AgentsListParams, AgentsListResult]("agents/list"),
	method[AgentRef, AgentDetail]("agents/get"),
	method[AgentsCreateParams, AgentDetail]("agents/create"),
	method[AgentsControlParams, AgentDetail]("agents/control"),
	method[AgentsActivityParams, Activity]("agents/activity"),
	method[AgentRef, Report]("reports/get"),
	method[ReviewsLatestParams, Review]("reviews/latest"),

	method[ChangesListParams, ChangesListResult]("changes/list"),
	method[ChangesDecideParams, ChangeSet]("changes/decide"),
	method[ChangesConfirmAllParams, ChangeSet]("changes/confirmAll"),
	method[ChangesPreviewParams, ChangePreview]("changes/preview"),
	method[ChangesUndoParams, ChangesUndoResult]("changes/undo"),
	method[DecisionsListParams, DecisionsListResult]("decisions/list"),

	noParams[TemplatesListResult]("templates/list"),
	method[TemplateParams, TemplateResult]("templates/get"),
	method[TemplateParams, TemplateVersionsResult]("templates/versions"),
	method[TemplateSaveParams, Template]("templates/save"),
	method[TemplateParams, Template]("templates/rollback"),
	method[EvolutionStartParams, EvolutionTurn]("evolution/start"),
	method[EvolutionSendParams, EvolutionTurn]("evolution/send"),
	method[EvolutionDecideParams, Template]("evolution/approve"),
	method[EvolutionDecideParams, EvolutionSession]("evolution/reject"),
}

// An EditorCommand is a command workspace/executeCommand runs (SPEC §6),
// the buttons an editor plugin shows: the method it reaches (and is
// ordered as), its arguments, all strings, by name (a name ending in ? may
// be left out), and the type of its result.
type EditorCommand struct {
	Name   string
	Method string
	Args   []string
	Result reflect.Type
}

func command[R any](name, method string, args ...string) EditorCommand {
	return EditorCommand{Name: name, Method: method, Args: args, Result: reflect.TypeFor[R]()}
}

// EditorCommands are the commands margin runs, as initialize announces
// them.
var EditorCommands = []EditorCommand{
	command[ChangeSet]("margin.confirm", "changes/decide", "changeSetId", "itemId"),
	command[ChangeSet]("margin.reject", "changes/decide", "changeSetId", "itemId", "reason?"),
	command[ChangeSet]("margin.confirmAll", "changes/confirmAll", "changeSetId"),
	// margin.preview is the Diff lens on an open item of a change set
	// file: an editor plugin runs it itself, showing the preview as a
	// diff with Apply and Reject; a client without one gets the preview.
	command[ChangePreview]("margin.preview", "changes/preview", "changeSetId", "itemId"),
	command[ChangesUndoResult]("margin.undo", "changes/undo", "changeSetId", "itemId?"),
	command[ShowChangesResult]("margin.showChanges", "changes/list", "changeSetId"),
	command[AgentDetail]("margin.wake", "agents/control", "agentId"),
	command[Answer]("margin.ask", "query/ask", "question"),
	// margin.showRelated is the "Related: A, B, C" lens on a note's first
	// line: it opens the first related note; a client that cannot open
	// documents gets the list.
	command[ShowRelatedResult]("margin.showRelated", "vault/related", "path"),
}

// A Notification is one of margin's notifications to the client (SPEC
// §6): its method and the type of its params.
type Notification struct {
	Name   string
	Params reflect.Type
}

func notification[P any](name string) Notification {
	return Notification{Name: name, Params: reflect.TypeFor[P]()}
}

// Notifications are what margin tells the client unasked, in SPEC's order.
var Notifications = []Notification{
	notification[ReportUpdated]("margin/reportUpdated"),
	notification[ChangeSetCreated]("margin/changeSetCreated"),
	notification[ChangeApplied]("margin/changeApplied"),
	notification[AgentStatus]("margin/agentStatus"),
	notification[IndexStatus]("margin/indexStatus"),
	notification[TemplateProblem]("margin/templateProblem"),
}
