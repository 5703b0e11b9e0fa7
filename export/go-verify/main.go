// Command ledger-verify-go checks an evidence pack offline, written from
// CONTRACT.md alone with Go's standard library and golang.org/x/mod's
// sumdb/note and sumdb/tlog, apart from the ledger's own verifiers.
//
// Usage:
//
//	ledger-verify-go (--vkey FILE | --trust-pack-key) PACK.tar.gz [--since CHECKPOINT_FILE] [--policy POLICY_FILE]
//
// It prints one line, "OK <scope>: ..." naming the scope, tree size and root
// (exit 0), or "FAIL: <reason>" (exit 1). Usage errors exit 2. With
// --policy (a c2sp.org/tlog-policy) the key must be a log of the policy
// (without --vkey it is the policy's log named as the pack's origin), the
// checkpoint's cosignatures must meet the policy's quorum, and the OK line
// is followed by a "witnessed:" line naming each witness and its time.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

const usage = "usage: ledger-verify-go (--vkey FILE | --trust-pack-key) PACK.tar.gz [--since CHECKPOINT_FILE] " +
	"[--policy POLICY_FILE]"

func usageError(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "ledger-verify-go: %s\n%s\n", fmt.Sprintf(format, args...), usage)
	os.Exit(2)
}

func parseArgs(args []string) options {
	var o options
	var vkeyFile, sinceFile, policyFile string
	for i := 0; i < len(args); i++ {
		a := args[i]
		flagValue := func() string {
			if k, v, ok := strings.Cut(a, "="); ok {
				a = k
				return v
			}
			if i+1 >= len(args) {
				usageError("%s needs a value", a)
			}
			i++
			return args[i]
		}
		switch {
		case a == "--vkey" || strings.HasPrefix(a, "--vkey="):
			vkeyFile = flagValue()
		case a == "--since" || strings.HasPrefix(a, "--since="):
			sinceFile = flagValue()
		case a == "--policy" || strings.HasPrefix(a, "--policy="):
			policyFile = flagValue()
		case a == "--trust-pack-key":
			o.trustPackKey = true
		case a == "-h" || a == "--help":
			fmt.Println(usage)
			os.Exit(0)
		case strings.HasPrefix(a, "-"):
			usageError("unknown flag %s", a)
		case o.pack != "":
			usageError("one pack only")
		default:
			o.pack = a
		}
	}
	if o.pack == "" {
		usageError("no pack given")
	}
	switch {
	case vkeyFile != "" && o.trustPackKey:
		usageError("--vkey and --trust-pack-key exclude each other")
	case vkeyFile == "" && !o.trustPackKey && policyFile == "":
		usageError("--vkey FILE or --policy FILE is required (the ledger's verifier key, or a tlog-policy naming it " +
			"as a log, obtained apart from the pack)")
	case vkeyFile != "":
		data, err := os.ReadFile(vkeyFile)
		if err != nil {
			usageError("--vkey: %v", err)
		}
		o.vkey = strings.TrimSpace(string(data))
		if o.vkey == "" || strings.ContainsAny(o.vkey, "\n\r") {
			usageError("--vkey: %s must hold one verifier key line", vkeyFile)
		}
	}
	if policyFile != "" {
		data, err := os.ReadFile(policyFile)
		if err != nil {
			usageError("--policy: %v", err)
		}
		if o.policy, err = parsePolicy(data); err != nil {
			usageError("--policy: %v", err)
		}
	}
	if sinceFile != "" {
		data, err := os.ReadFile(sinceFile)
		if err != nil {
			usageError("--since: %v", err)
		}
		o.since, o.sinceTime = splitKept(data)
		if o.since == nil {
			usageError("--since: %s holds a time note but no checkpoint before it", sinceFile)
		}
	}
	return o
}

func main() {
	o := parseArgs(os.Args[1:])
	if o.vkey != "" {
		if _, err := note.NewVerifier(o.vkey); err != nil {
			usageError("--vkey: not a verifier key (name+id+base64): %v", err)
		}
	}
	line, err := verify(o)
	var usage *usageErr
	if errors.As(err, &usage) {
		usageError("%s", usage.msg)
	}
	if err != nil {
		fmt.Printf("FAIL: %s\n", printable(err.Error()))
		os.Exit(1)
	}
	fmt.Println(line)
}

// printable shows what a pack chose of a message as printable ASCII.
func printable(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 0x20 && r < 0x7f {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}
