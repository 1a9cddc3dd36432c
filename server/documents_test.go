package server

import (
	"testing"

	"github.com/margin-md/margin/server/protocol"
)

func TestDocumentIncrementalChanges(t *testing.T) {
	var d documents
	d.set(document{Path: "Daily/d.md", Version: 1, Text: "## 09:00\n🚀 東京 [[Ship]]\n"})
	at := func(line, ch int) protocol.Position { return protocol.Position{Line: line, Character: ch} }
	err := d.change("Daily/d.md", 3, []contentChange{
		// "東京" becomes "大阪": characters 3..5 in UTF-16 (the rocket is two).
		{Range: &protocol.Range{Start: at(1, 3), End: at(1, 5)}, Text: "大阪"},
		// then a line after the link, from the end of the text the
		// change before left
		{Range: &protocol.Range{Start: at(2, 0), End: at(2, 0)}, Text: "🎉 done\n"},
	}, utf16Encoding)
	if err != nil {
		t.Fatal(err)
	}
	doc := d.open["Daily/d.md"]
	if want := "## 09:00\n🚀 大阪 [[Ship]]\n🎉 done\n"; doc.Text != want || doc.Version != 3 {
		t.Errorf("buffer = %q v%d, want %q v3", doc.Text, doc.Version, want)
	}

	// A change without a range replaces the whole buffer.
	if err := d.change("Daily/d.md", 4, []contentChange{{Text: "new"}}, utf16Encoding); err != nil || doc.Text != "new" {
		t.Errorf("full change: %q, %v", doc.Text, err)
	}

	// A range that ends before it starts: margin forgets the buffer
	// rather than guess at it.
	if err := d.change("Daily/d.md", 5, []contentChange{{Range: &protocol.Range{Start: at(0, 2), End: at(0, 1)}, Text: "x"}}, utf16Encoding); err == nil {
		t.Error("a backwards range was taken")
	}
	if _, ok := d.open["Daily/d.md"]; ok {
		t.Error("a buffer margin lost track of is still used")
	}
}
