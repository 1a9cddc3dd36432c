package history

// Started is started, for the tests of a process's liveness.
var Started = started
