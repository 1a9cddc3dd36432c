package vectors

// Model returns the current model's fingerprint ("" before any queue ran)
// and how many vectors of it Nearest can search, from memory: cheap enough
// for every search deciding whether it can search by meaning.
func (s *Store) Model() (fingerprint string, vectors int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.mem != nil {
		vectors = s.mem.len()
	}
	return s.model.fingerprint, vectors
}
