package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/margin-md/margin/server/protocol"
	"github.com/margin-md/margin/server/wire"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/retrieve"
)

func (s *Server) vaultStatus(ctx context.Context, _ *empty) (protocol.StatusResult, error) {
	v, err := s.openVaultReady(ctx)
	if err != nil {
		return protocol.StatusResult{}, err
	}
	st, err := v.Status(ctx)
	if err != nil {
		return protocol.StatusResult{}, err
	}
	res := protocol.StatusResult{VaultStatus: wire.VaultStatus(st), OpenNotes: s.docs.paths(), Model: s.model.get()}
	if ws := s.open(); ws != nil {
		counts, err := ws.Agents.Counts(ctx)
		if err != nil {
			return protocol.StatusResult{}, err
		}
		res.Agents = wire.AgentCounts(counts)
		e, err := ws.Vectors.Status(ctx)
		if err != nil {
			return protocol.StatusResult{}, err
		}
		res.Embedding = wire.EmbeddingStatus(e)
	}
	return res, nil
}

func (s *Server) vaultCoverage(ctx context.Context, p *protocol.CoverageParams) (protocol.CoverageResult, error) {
	switch p.State {
	case "", index.StateIndexed, index.StateSkipped, index.StateFailed:
	default:
		return protocol.CoverageResult{}, invalidParams("state", fmt.Sprintf("must be indexed, skipped or failed, got %q", p.State))
	}
	v, err := s.openVaultReady(ctx)
	if err != nil {
		return protocol.CoverageResult{}, err
	}
	files, err := v.Index().Coverage(ctx, p.State)
	if err != nil {
		return protocol.CoverageResult{}, err
	}
	if files == nil {
		files = []index.FileState{}
	}
	return protocol.CoverageResult{Files: wire.FileStates(files)}, nil
}

func (s *Server) vaultSearch(ctx context.Context, p *protocol.SearchParams) (protocol.SearchResult, error) {
	q, err := searchQuery(p)
	if err != nil {
		return protocol.SearchResult{}, err
	}
	v, err := s.openVaultReady(ctx)
	if err != nil {
		return protocol.SearchResult{}, err
	}
	if q.Glob != "" {
		if q.Glob, err = vaultPath(v, "glob", q.Glob); err != nil {
			return protocol.SearchResult{}, err
		}
	}
	var r retrieve.Result
	if ws := s.open(); ws != nil && ws.Retrieve != nil {
		r, err = ws.Retrieve.Find(ctx, q)
	} else {
		r.Mode = q.Mode
		r.Result, err = v.Index().Find(ctx, q)
	}
	if err != nil {
		return protocol.SearchResult{}, err
	}
	if r.Hits == nil {
		r.Hits = []index.Hit{}
	}
	return wire.SearchResult(r), nil
}

// searchQuery validates search params, naming the bad field.
func searchQuery(p *protocol.SearchParams) (index.Query, error) {
	q := index.Query{Text: p.Query, Mode: index.Mode(p.Mode), From: p.From, To: p.To, Glob: p.Glob, Tags: p.Tags, Limit: p.Limit, Outputs: p.Outputs}
	if err := retrieve.Validate(q); err != nil {
		var qe *index.QueryError
		if errors.As(err, &qe) {
			return q, invalidParams(qe.Field, qe.Reason)
		}
		return q, err
	}
	return q, nil
}

// vaultRescan walks the vault again and reconciles the index, as the
// watcher does after an overflow; editors offer it as a command.
func (s *Server) vaultRescan(ctx context.Context, _ *empty) (protocol.RescanResult, error) {
	v, err := s.openVaultReady(ctx)
	if err != nil {
		return protocol.RescanResult{}, err
	}
	res, err := v.Rescan(ctx, "requested by the client", func(done, total int) {
		reportProgress(ctx, fmt.Sprintf("%d/%d files", done, total), done*100/max(total, 1))
	})
	return protocol.RescanResult{ScanResult: wire.ScanResult(res)}, err
}

// uriPath turns a document URI into a vault path.
func (s *Server) uriPath(uri string) (string, error) {
	ws := s.open()
	if ws == nil {
		return "", errNoVault
	}
	return ws.Vault.Path(uri)
}
