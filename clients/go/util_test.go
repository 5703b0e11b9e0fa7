package ledger_test

import (
	"os/exec"
	"testing"
)

func runScript(t *testing.T, script string, args ...string) []byte {
	t.Helper()
	out, err := exec.Command(script, args...).Output()
	if err != nil {
		t.Fatalf("%s %v: %v", script, args, err)
	}
	return out
}
