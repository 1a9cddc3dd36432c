package mcp

import "time"

// Scanned is when the last scan that succeeded began; zero before one.
func (s *Server) Scanned() time.Time {
	s.scanMu.Lock()
	defer s.scanMu.Unlock()
	return s.scanned
}
