package mcp

// Walks is how many scans of the vault the server has started.
func (s *Server) Walks() int {
	s.scanMu.Lock()
	defer s.scanMu.Unlock()
	return s.walks
}
