package agents

import (
	"strings"
	"testing"
)

func TestParseTemplate(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		want          Template
		err           string
	}{
		{
			name:    "split directives",
			content: "---\nmargin: template\nname: task-agent\nversion: 3\n---\n## General Directive\nBe brief.\n\n## Report Directive\nAchieved, left.\n",
			want:    Template{Name: "task-agent", Version: 3, General: "Be brief.", Report: "Achieved, left."},
		},
		{
			name:    "legacy single section, defaults for missing keys",
			content: "---\nmargin: template\n---\n## Directives\nDo it all.\n",
			want:    Template{Name: templateName, Version: 1, Legacy: "Do it all."},
		},
		{
			name:    "a fenced heading stays inside its section",
			content: "---\nversion: 2\n---\n## General Directive\n```\n## not a section\n```\n## Report Directive\nR\n",
			want:    Template{Name: templateName, Version: 2, General: "```\n## not a section\n```", Report: "R"},
		},
		{name: "version of the wrong type", content: "---\nversion: two\n---\n## Directives\nx\n", err: "broken frontmatter"},
		{name: "broken YAML", content: "---\nname: [oops\n---\n## Directives\nx\n", err: "broken frontmatter"},
		{name: "no directive section", content: "---\nversion: 1\n---\n## Notes\nx\n", err: "no ## General Directive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseTemplate("Margin/Templates/task-agent.md", []byte(tc.content))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
