package server

import (
	"context"
	"errors"

	"github.com/margin-md/margin/agents/review"
	"github.com/margin-md/margin/server/protocol"
	"github.com/margin-md/margin/server/wire"
)

// reviewsLatest reads the note of a scheduled review's latest run, or its
// run on a date.
func (s *Server) reviewsLatest(ctx context.Context, p *protocol.ReviewsLatestParams) (protocol.Review, error) {
	if p.Name == "" {
		return protocol.Review{}, invalidParams("name", "is required")
	}
	ws, _, err := s.agentsReady(ctx)
	if err != nil {
		return protocol.Review{}, err
	}
	n, err := ws.Reviews.Latest(ctx, p.Name, p.Date)
	switch {
	case errors.Is(err, review.ErrBadReviewName):
		return protocol.Review{}, invalidParams("name", err.Error())
	case errors.Is(err, review.ErrBadDate):
		return protocol.Review{}, invalidParams("date", err.Error())
	case err != nil:
		return protocol.Review{}, err
	}
	return wire.Review(n), nil
}
