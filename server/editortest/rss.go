package editortest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// PeakRSS runs cmd and returns its peak resident set in KiB, read from
// /proc as VmHWM while it runs (Linux). Not rusage's maxrss: Linux counts
// in it the resident set of the process that forked the child (the test or
// benchmark, which can be far bigger) as it stood when the child exec'd.
func PeakRSS(cmd *exec.Cmd) (int64, error) {
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak int64
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return 0, fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), err)
			}
			if peak == 0 {
				return 0, errors.New("never read the child's VmHWM (no /proc, or it exited at once)")
			}
			return peak, nil
		case <-tick.C:
			if kb, ok := vmHWM(status); ok {
				peak = max(peak, kb)
			}
		}
	}
}

// VmHWM reads the peak resident set in KiB of a process that runs, for
// a caller that talks to it before it exits.
func VmHWM(pid int) (int64, error) {
	kb, ok := vmHWM(fmt.Sprintf("/proc/%d/status", pid))
	if !ok {
		return 0, fmt.Errorf("no VmHWM in /proc/%d/status (not Linux, or it exited)", pid)
	}
	return kb, nil
}

// vmHWM reads the VmHWM line of a /proc status file; ok is false while the
// process is exiting and the file has no memory lines.
func vmHWM(status string) (kb int64, ok bool) {
	data, err := os.ReadFile(status)
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(data)) {
		if v, found := strings.CutPrefix(line, "VmHWM:"); found {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb, err == nil
		}
	}
	return 0, false
}
