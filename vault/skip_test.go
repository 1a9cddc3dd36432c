package vault

import (
	"context"
	"strings"
	"testing"

	"github.com/margin-md/margin/vault/index"
)

// An Excalidraw drawing is the plugin's file, not a note: skipped with the
// reason, by its name or, renamed, by its property; never failed.
func TestExcalidrawDrawingsAreSkipped(t *testing.T) {
	dir := writeVault(t, map[string]string{
		"Drawings/Sketch 2025-10-01.excalidraw.md": "---\n\nexcalidraw-plugin: parsed\ntags: [excalidraw]\n\n---\nopen this one in the drawing view\n\n# Excalidraw Data\n## Drawing\n```compressed-json\nbXkgb3duIGRyYXdpbmcgb2YgYSBib2F0IG9uIGEgbGFrZQ\n```\n%%\n",
		"Drawings/Renamed sketch.md":               "---\nexcalidraw-plugin: parsed\n---\n{\"type\": \"excalidraw\", \"elements\": [\n",
		"Drawings/Broken.excalidraw.md":            "---\nexcalidraw-plugin: [\n---\n",
		"Notes/About drawings.md":                  "---\ntags: [excalidraw]\n---\nhow I draw\n",
	})
	v := scanned(t, Options{Dir: dir})
	st, err := v.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Failed != 0 || st.Skipped != 3 || st.Notes != 1 {
		t.Errorf("status %+v: want 3 drawings skipped, 1 note, none failed", st)
	}
	skipped, _ := v.Index().Coverage(context.Background(), index.StateSkipped)
	for _, f := range skipped {
		if !strings.Contains(f.Reason, "Excalidraw drawing") {
			t.Errorf("%s skipped because %q, want the drawing named", f.Path, f.Reason)
		}
	}
}

// A templates folder the settings name but the vault lacks is reported;
// an empty one is no templates folder at all.
func TestStaleTemplatesFolderIsReported(t *testing.T) {
	dir := writeVault(t, map[string]string{
		".obsidian/templates.json":                       `{"folder": "Old templates"}`,
		".obsidian/plugins/templater-obsidian/data.json": `{"templates_folder": ""}`,
		"Notes/a.md": "a\n",
	})
	v := scanned(t, Options{Dir: dir})
	r := v.Rules()
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], `templates folder "Old templates" in .obsidian/templates.json is not a folder of the vault`) {
		t.Errorf("warnings %q, want the stale templates folder", r.Warnings)
	}
	if len(r.TemplateFolders) != 1 {
		t.Errorf("template folders %q, want only the named one", r.TemplateFolders)
	}
}
