package llm

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	c := &Client{cfg: Config{Retry: RetryConfig{Backoff: Backoff{Initial: 500 * time.Millisecond, Max: 8 * time.Second}}}}
	tests := []struct {
		name       string
		attempt    int
		retryAfter time.Duration
		want       time.Duration
		wantOK     bool
	}{
		{"first retry", 0, 0, 500 * time.Millisecond, true},
		{"doubles", 2, 0, 2 * time.Second, true},
		{"capped at max", 10, 0, 8 * time.Second, true},
		{"retry-after longer than backoff", 0, 3 * time.Second, 3 * time.Second, true},
		{"retry-after shorter than backoff", 3, time.Second, 4 * time.Second, true},
		{"retry-after beyond max is not waited for", 0, 30 * time.Second, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := c.backoff(tt.attempt, tt.retryAfter)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("backoff(%d, %v) = %v, %v; want %v, %v", tt.attempt, tt.retryAfter, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
