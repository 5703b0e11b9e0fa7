// Command ledger-verify-go checks an evidence pack offline, written from
// CONTRACT.md alone with Go's standard library and golang.org/x/mod's
// sumdb/note and sumdb/tlog, apart from the ledger's own verifiers.
//
// Usage:
//
//	ledger-verify-go (--vkey FILE | --key-set FILE | --trust-pack-key) PACK.tar.gz [--key-history FILE]
//	    [--since CHECKPOINT_FILE] [--policy POLICY_FILE]
//	    [--expect-scope SCOPE] [--not-older-than SIZE|CHECKPOINT_FILE] [--expect-grace-ms N] [--no-progress]
//
// It prints one line, "OK <scope>: ..." naming the scope, tree size and root
// (exit 0), or "FAIL: <reason>" (exit 1; a pack signed by another key than
// the one given: "FAIL: manifest.sig: signed by NAME+ID, not by NAME+ID
// (the key given)"). Usage errors exit 2; a pack that cannot be read exits
// 3 ("cannot read the pack P: ..."), nothing of it judged. With
// --policy (a c2sp.org/tlog-policy) the key must be a log of the policy
// (without --vkey it is the policy's log named as the pack's origin), the
// checkpoint's cosignatures must meet the policy's quorum, and the OK line
// is followed by a "witnessed:" line naming each witness and its time; a
// policy naming monitors (CONTRACT section 5c) requires their map
// cosignatures of the checkpoint-time note to meet its monitor-quorum, and
// a "monitored:" line follows, naming each monitor and its time.
// --expect-scope and --not-older-than are those of `ledgerctl verify`;
// --expect-grace-ms N refuses a pack whose manifest states another grace.
// --key-set FILE gives the keys the auditor trusts, each for a range of tree
// sizes, and --key-history FILE the rotations to follow from them (or from
// --vkey) (CONTRACT section 5d, keyset.go): every signed note is then
// checked against the key trusted at the size it is about. Every value
// taken from the pack is printed escaped (esc).
//
// While the entries are checked, a line on stderr says how many are done,
// of how many, and how long the rest will take (progress.go), rewritten in
// place and erased when they are done; only when stderr is a terminal,
// never with --no-progress. LEDGER_PROGRESS_INTERVAL_MS, for tests, sets
// the line's interval in milliseconds (250 unless set).
package main

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

const usage = "usage: ledger-verify-go (--vkey FILE | --key-set FILE | --trust-pack-key) PACK.tar.gz " +
	"[--key-history FILE] [--since CHECKPOINT_FILE] " +
	"[--policy POLICY_FILE] [--expect-scope run:TEAM/RUN|seq:A:B|team:TEAM,FROM,TO] " +
	"[--not-older-than SIZE|CHECKPOINT_FILE] [--expect-grace-ms N] [--tsa-root FILE [--tsa-max-delay SECONDS]] " +
	"[--no-progress]"

func usageError(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "ledger-verify-go: %s\n%s\n", esc(fmt.Sprintf(format, args...)), usage)
	os.Exit(2)
}

func parseArgs(args []string) options {
	var o options
	var vkeyFile, sinceFile, policyFile, scopeArg, olderArg, graceArg, keySetFile, historyFile string
	var tsaRootFile, tsaDelayArg string
	var hasScope, hasOlder, hasGrace, noProgress bool
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
		case a == "--key-set" || strings.HasPrefix(a, "--key-set="):
			keySetFile = flagValue()
		case a == "--key-history" || strings.HasPrefix(a, "--key-history="):
			historyFile = flagValue()
		case a == "--since" || strings.HasPrefix(a, "--since="):
			sinceFile = flagValue()
		case a == "--policy" || strings.HasPrefix(a, "--policy="):
			policyFile = flagValue()
		case a == "--expect-scope" || strings.HasPrefix(a, "--expect-scope="):
			scopeArg, hasScope = flagValue(), true
		case a == "--not-older-than" || strings.HasPrefix(a, "--not-older-than="):
			olderArg, hasOlder = flagValue(), true
		case a == "--expect-grace-ms" || strings.HasPrefix(a, "--expect-grace-ms="):
			graceArg, hasGrace = flagValue(), true
		case a == "--tsa-root" || strings.HasPrefix(a, "--tsa-root="):
			tsaRootFile = flagValue()
		case a == "--tsa-max-delay" || strings.HasPrefix(a, "--tsa-max-delay="):
			tsaDelayArg = flagValue()
		case a == "--trust-pack-key":
			o.trustPackKey = true
		case a == "--no-progress":
			noProgress = true
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
	o.tsaRoots, o.tsaMaxDelay = tsaOptions(tsaRootFile, tsaDelayArg)
	switch {
	case vkeyFile != "" && o.trustPackKey:
		usageError("--vkey and --trust-pack-key exclude each other")
	case keySetFile != "" && vkeyFile != "":
		usageError("--key-set and --vkey exclude each other (a key set line without from or until trusts its key for " +
			"every size)")
	case keySetFile != "" && o.trustPackKey:
		usageError("--key-set and --trust-pack-key exclude each other")
	case historyFile != "" && vkeyFile == "" && keySetFile == "":
		usageError("--key-history needs the keys it starts from: --vkey FILE or --key-set FILE")
	case keySetFile == "" && vkeyFile == "" && !o.trustPackKey && policyFile == "":
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
	if keySetFile != "" {
		data, err := os.ReadFile(keySetFile)
		if err != nil {
			usageError("--key-set: %v", err)
		}
		if o.keys, err = parseKeySet(data); err != nil {
			usageError("--key-set %s: %v", keySetFile, err)
		}
	}
	if historyFile != "" {
		data, err := os.ReadFile(historyFile)
		if err != nil {
			usageError("--key-history: %v", err)
		}
		o.history = data
		if o.keys == nil {
			k, err := parseLedgerKey(o.vkey)
			if err != nil {
				usageError("--vkey: not a verifier key (name+id+base64): %v", err)
			}
			o.keys = oneKey(k)
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
	if hasScope {
		s, err := parseExpectedScope(scopeArg)
		if err != nil {
			usageError("--expect-scope: %v", err)
		}
		o.expectScope = s
	}
	if hasOlder {
		if err := notOlderThan(&o, olderArg); err != nil {
			usageError("%v", err)
		}
	}
	if hasGrace {
		n, err := strconv.ParseUint(graceArg, 10, 63)
		if err != nil || strconv.FormatUint(n, 10) != graceArg {
			usageError("--expect-grace-ms: want milliseconds, a decimal integer, found %s", graceArg)
		}
		o.expectGraceMs = &n
	}
	o.progress = terminalProgress(noProgress)
	return o
}

func main() {
	o := parseArgs(os.Args[1:])
	if o.vkey != "" {
		if _, err := note.NewVerifier(o.vkey); err != nil {
			usageError("--vkey: not a verifier key (name+id+base64): %v", err)
		}
	}
	if f, err := os.Open(o.pack); err != nil {
		fmt.Fprintf(os.Stderr, "ledger-verify-go: cannot read the pack %s: %s\n", esc(o.pack), esc(reason(err)))
		os.Exit(3)
	} else if info, err := f.Stat(); err == nil && info.IsDir() {
		fmt.Fprintf(os.Stderr, "ledger-verify-go: cannot read the pack %s: is a directory\n", esc(o.pack))
		os.Exit(3)
	} else {
		f.Close()
	}
	out, code := run(o)
	if code == 2 {
		usageError("%s", out)
	}
	fmt.Println(out)
	os.Exit(code)
}

// reason is what an error of the file system says, without the path and
// operation it repeats ("no such file or directory").
func reason(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// run verifies the pack and returns what is printed, escaped (esc), and
// the exit code: the OK lines and 0, "FAIL: ..." and 1, or the message of a
// usage error found once the pack is read and 2 (printed by usageError).
func run(o options) (string, int) {
	lines, err := verify(o)
	var usage *usageErr
	if errors.As(err, &usage) {
		return usage.msg, 2
	}
	if err != nil {
		return "FAIL: " + esc(err.Error()), 1
	}
	for i, l := range lines {
		lines[i] = esc(l)
	}
	return strings.Join(lines, "\n"), 0
}

// tsaOptions reads --tsa-root (PEM certificates) and --tsa-max-delay
// (whole seconds, 1 or more; default 60).
func tsaOptions(rootFile, delayArg string) (*x509.CertPool, int64) {
	delay := defaultStampDelay
	if delayArg != "" {
		n, err := strconv.ParseInt(delayArg, 10, 64)
		if err != nil || n < 1 {
			usageError("--tsa-max-delay: want a number of seconds, 1 or more, found %s", delayArg)
		}
		delay = n
	}
	if rootFile == "" {
		return nil, delay
	}
	data, err := os.ReadFile(rootFile)
	if err != nil {
		usageError("--tsa-root: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		usageError("--tsa-root: %s holds no PEM certificate", rootFile)
	}
	return pool, delay
}
