package server

import (
	"context"
	"fmt"
	"regexp"

	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/index"
)

type statusResult struct {
	vault.Status
	// OpenNotes are the notes open in the editor, whose buffers margin
	// treats as their truth.
	OpenNotes []string    `json:"openNotes"`
	Model     modelStatus `json:"model"`
	Agents    task.Counts `json:"agents"`
}

func (s *Server) vaultStatus(ctx context.Context, _ *empty) (statusResult, error) {
	v, err := s.openVaultReady(ctx)
	if err != nil {
		return statusResult{}, err
	}
	st, err := v.Status(ctx)
	if err != nil {
		return statusResult{}, err
	}
	res := statusResult{Status: st, OpenNotes: s.docs.paths(), Model: s.model.get()}
	s.mu.Lock()
	rt := s.agents
	s.mu.Unlock()
	if rt != nil {
		if res.Agents, err = rt.Counts(ctx); err != nil {
			return statusResult{}, err
		}
	}
	return res, nil
}

type coverageParams struct {
	State string `json:"state"`
}

type coverageResult struct {
	Files []index.FileState `json:"files"`
}

func (s *Server) vaultCoverage(ctx context.Context, p *coverageParams) (coverageResult, error) {
	switch p.State {
	case "", index.StateIndexed, index.StateSkipped, index.StateFailed:
	default:
		return coverageResult{}, invalidParams("state", fmt.Sprintf("must be indexed, skipped or failed, got %q", p.State))
	}
	v, err := s.openVaultReady(ctx)
	if err != nil {
		return coverageResult{}, err
	}
	files, err := v.Index().Coverage(ctx, p.State)
	if err != nil {
		return coverageResult{}, err
	}
	if files == nil {
		files = []index.FileState{}
	}
	return coverageResult{Files: files}, nil
}

type searchParams struct {
	Query string   `json:"query"`
	Mode  string   `json:"mode"`
	From  string   `json:"from"`
	To    string   `json:"to"`
	Glob  string   `json:"glob"`
	Tags  []string `json:"tags"`
	Limit int      `json:"limit"`
}

// searchResult is index.Result: hits, how many notes matched in all, and
// whether the hits were cut to the limit.
type searchResult = index.Result

var isoDate = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

func (s *Server) vaultSearch(ctx context.Context, p *searchParams) (searchResult, error) {
	q, err := p.query()
	if err != nil {
		return searchResult{}, err
	}
	v, err := s.openVaultReady(ctx)
	if err != nil {
		return searchResult{}, err
	}
	if q.Glob != "" {
		if q.Glob, err = vaultPath(v, "glob", q.Glob); err != nil {
			return searchResult{}, err
		}
	}
	r, err := v.Index().Find(ctx, q)
	if err != nil {
		return searchResult{}, err
	}
	if r.Hits == nil {
		r.Hits = []index.Hit{}
	}
	return r, nil
}

// query validates search params, naming the bad field.
func (p *searchParams) query() (index.Query, error) {
	q := index.Query{Text: p.Query, Mode: index.Mode(p.Mode), From: p.From, To: p.To, Glob: p.Glob, Tags: p.Tags, Limit: p.Limit}
	switch q.Mode {
	case "", index.ModeAll, index.ModeAny, index.ModePhrase:
	default:
		return q, invalidParams("mode", fmt.Sprintf("must be all, any or phrase, got %q", p.Mode))
	}
	for field, d := range map[string]string{"from": p.From, "to": p.To} {
		if d != "" && !isoDate.MatchString(d) {
			return q, invalidParams(field, fmt.Sprintf("must be a date YYYY-MM-DD, got %q", d))
		}
	}
	if p.Limit < 0 || p.Limit > 1000 {
		return q, invalidParams("limit", fmt.Sprintf("must be between 1 and 1000, got %d", p.Limit))
	}
	if p.Query == "" && p.From == "" && p.To == "" && p.Glob == "" && len(p.Tags) == 0 {
		return q, invalidParams("query", "is required unless from, to, glob or tags narrow the search")
	}
	return q, nil
}

type rescanResult struct {
	vault.ScanResult
}

// vaultRescan walks the vault again and reconciles the index, as the
// watcher does after an overflow; editors offer it as a command.
func (s *Server) vaultRescan(ctx context.Context, _ *empty) (rescanResult, error) {
	v, err := s.openVaultReady(ctx)
	if err != nil {
		return rescanResult{}, err
	}
	res, err := v.Rescan(ctx, "requested by the client", func(done, total int) {
		reportProgress(ctx, fmt.Sprintf("%d/%d files", done, total), done*100/max(total, 1))
	})
	return rescanResult{res}, err
}

// uriPath turns a document URI into a vault path.
func (s *Server) uriPath(uri string) (string, error) {
	s.mu.Lock()
	v := s.vault
	s.mu.Unlock()
	if v == nil {
		return "", errNoVault
	}
	return v.Path(uri)
}
