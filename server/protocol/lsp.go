package protocol

// The LSP shapes margin sends besides its own methods' results: code
// lenses, hovers and the edits it asks an editor to apply. Editors have
// them from their LSP libraries, so gen does not write them out.

// Position is a place in a document: a 0-based line and a character
// offset counted in the encoding initialize agreed on.
type Position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// Range is the text from Start up to End.
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

// Command is a button: its title and the executeCommand it runs.
type Command struct {
	Title     string `json:"title"`
	Command   string `json:"command"`
	Arguments []any  `json:"arguments,omitempty"`
}

// CodeLens is one of textDocument/codeLens's results: a command shown
// above a line.
type CodeLens struct {
	Range   Range   `json:"range"`
	Command Command `json:"command"`
}

// Hover is textDocument/hover's result (null where there is none).
type Hover struct {
	Contents MarkupContent `json:"contents"`
	Range    Range         `json:"range"`
}

// MarkupContent is text in a markup kind ("markdown").
type MarkupContent struct {
	Kind  string `json:"kind"`
	Value string `json:"value"`
}

// VersionedTextDocument names a document and the version of it an edit
// or a change applies to.
type VersionedTextDocument struct {
	URI     string `json:"uri"`
	Version int    `json:"version"`
}

// TextEdit replaces Range with NewText.
type TextEdit struct {
	Range   Range  `json:"range"`
	NewText string `json:"newText"`
}

// ApplyEditParams are workspace/applyEdit's params, as margin sends them:
// one document's edits at the version margin read.
type ApplyEditParams struct {
	Label string        `json:"label"`
	Edit  WorkspaceEdit `json:"edit"`
}

// WorkspaceEdit is the edits of an applyEdit, by document.
type WorkspaceEdit struct {
	DocumentChanges []TextDocumentEdit `json:"documentChanges"`
}

// TextDocumentEdit is the edits to one version of one document.
type TextDocumentEdit struct {
	TextDocument VersionedTextDocument `json:"textDocument"`
	Edits        []TextEdit            `json:"edits"`
}

// ApplyEditResult is the editor's answer to workspace/applyEdit.
type ApplyEditResult struct {
	Applied       bool   `json:"applied"`
	FailureReason string `json:"failureReason,omitempty"`
}
