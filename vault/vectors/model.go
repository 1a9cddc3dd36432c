package vectors

import "context"

// Model returns the current model's fingerprint ("" before any queue ran)
// and how many vectors of it Nearest can search. It reads the codes into
// memory first unless they are (Open leaves that to the first search), so
// every later call is answered from memory: cheap enough for every search
// deciding whether it can search by meaning.
func (s *Store) Model(ctx context.Context) (fingerprint string, vectors int, err error) {
	if err := s.codes(ctx); err != nil {
		return "", 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.mem != nil {
		vectors = s.mem.len()
	}
	return s.model.fingerprint, vectors, nil
}
