package server

import (
	"context"
	"log/slog"
)

// clientLogHandler logs to the next handler (stderr) and forwards records at
// info level and above to the editor as window/logMessage. stdout carries
// only protocol messages, so nothing here ever prints.
type clientLogHandler struct {
	next slog.Handler
	s    *Server
}

// LSP MessageType values.
const (
	messageError   = 1
	messageWarning = 2
	messageInfo    = 3
)

func (h *clientLogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || h.next.Enabled(ctx, l)
}

func (h *clientLogHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelInfo {
		typ := messageInfo
		switch {
		case r.Level >= slog.LevelError:
			typ = messageError
		case r.Level >= slog.LevelWarn:
			typ = messageWarning
		}
		msg := r.Message
		r.Attrs(func(a slog.Attr) bool {
			msg += " " + a.String()
			return true
		})
		h.s.notifyDroppable("window/logMessage", struct {
			Type    int    `json:"type"`
			Message string `json:"message"`
		}{typ, msg})
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h *clientLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &clientLogHandler{next: h.next.WithAttrs(attrs), s: h.s}
}

func (h *clientLogHandler) WithGroup(name string) slog.Handler {
	return &clientLogHandler{next: h.next.WithGroup(name), s: h.s}
}
