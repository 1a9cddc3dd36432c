package index

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The cold build's syncs of the database file keep SQLite's locks: POSIX
// record locks belong to the process, and closing any descriptor of the
// file drops them all, so a sync through a descriptor opened and closed
// for it let another margin process write while this one was writing.
// Here this process holds a write transaction while a cold build's marker
// is released (which syncs the file), and another process must still be
// refused the write lock.
func TestColdBuildSyncKeepsTheLocks(t *testing.T) {
	if os.Getenv("MARGIN_OTHER_PROCESS_DB") != "" {
		t.Skip("run as the other process by TestColdBuildSyncKeepsTheLocks")
	}
	ix, dbPath := openIndex(t)
	ctx := context.Background()
	marker, err := markCold(dbPath)
	if err != nil || marker == nil {
		t.Fatalf("markCold: %v", err)
	}
	holding, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- ix.write(ctx, func(_ *writeConn, tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO index_state (key, value) VALUES ('test', 1)`); err != nil {
				return err
			}
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	if err := marker.release(ix.file); err != nil {
		t.Fatal(err)
	}
	out, err := otherProcessWrites(t, dbPath)
	close(release)
	if werr := <-done; werr != nil {
		t.Fatal(werr)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the other process: %s", out)
	if !strings.Contains(out, "locked") {
		t.Errorf("another process began a write while this one held it: %s", out)
	}
}

// otherProcessWrites runs this test binary as another process that tries
// to begin a write on the database at path, and returns what it says.
func otherProcessWrites(t *testing.T, path string) (string, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestOtherProcessWrites$")
	cmd.Env = append(os.Environ(), "MARGIN_OTHER_PROCESS_DB="+path)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestOtherProcessWrites is the other process of TestColdBuildSyncKeepsTheLocks.
func TestOtherProcessWrites(t *testing.T) {
	path := os.Getenv("MARGIN_OTHER_PROCESS_DB")
	if path == "" {
		t.Skip("run by TestColdBuildSyncKeepsTheLocks")
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.Exec(`BEGIN IMMEDIATE`)
	fmt.Printf("begin immediate: %v\n", err)
}
