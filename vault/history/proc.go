package history

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// started says when process pid started: this boot's id and the start
// time in clock ticks, field 22 of /proc/<pid>/stat. A pid the kernel gave
// to another process since has another. A process that has exited and
// waits for its parent to reap it (a zombie) started at no time: it
// writes nothing more. ok is false where /proc does not answer for pid
// (not Linux, or no such process): liveness then rests on the pid alone.
func started(pid int) (at string, ok bool) {
	boot := bootID()
	if boot == "" {
		return "", false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	// The command name, in parentheses, may hold spaces and parentheses:
	// the fields are counted after its last ')', which is field 2.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return "", false
	}
	fields := bytes.Fields(stat[i+1:])
	if len(fields) < 20 {
		return "", false
	}
	if state := string(fields[0]); state == "Z" || state == "X" {
		return "", true
	}
	return boot + "/" + string(fields[19]), true
}

var bootID = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(b))
})

// self is this process's start, recorded beside its pid ("" when /proc
// does not tell).
var self = sync.OnceValue(func() string {
	at, _ := started(os.Getpid())
	return at
})

// alive reports whether the process that recorded pid and start may
// still be running. A start that /proc contradicts is a process gone
// whose pid was reused; where /proc cannot tell, a process by that pid
// counts.
func alive(pid int, start string) bool {
	if start != "" {
		if now, ok := started(pid); ok {
			return now == start
		}
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	// Signal 0 only checks: a process of another user answers EPERM.
	err = p.Signal(syscall.Signal(0))
	return !errors.Is(err, os.ErrProcessDone) && !errors.Is(err, syscall.ESRCH)
}

// mine reports whether a record of pid and start is this process's.
func mine(pid int, start string) bool {
	return pid == os.Getpid() && (start == "" || start == self())
}
