package ledger

// Following the leader of a replicated shard. A node that follows refuses
// an append with UNAVAILABLE and names the leader ("... at
// leader=HOST:PORT (epoch E); send appends there",
// ledger/storage/replication/node.cc); the Emitter sends the batch there at once
// and keeps sending there. When the leader it follows fails it goes back to
// the nodes it was given, and on each failure moves on to the next of them.
//
// Thread safety: targets is used by the Emitter's sender goroutine only.

import (
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
)

// LeaderNamed returns the leader a follower's refusal names: the HOST:PORT
// after "leader=" in an UNAVAILABLE message, up to a space, ';' or ')', as
// ledgerctl reads it (cmd/ledgerctl.cc LeaderNamed); "" for any other
// status.
func LeaderNamed(code codes.Code, message string) string {
	if code != codes.Unavailable {
		return ""
	}
	at := strings.Index(message, "leader=")
	if at < 0 {
		return ""
	}
	rest := message[at+len("leader="):]
	if end := strings.IndexAny(rest, " ;)"); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

// splitTargets returns the nodes a target names: one HOST:PORT, or several
// separated by commas (the nodes of a shard).
func splitTargets(target string) ([]string, error) {
	if target == "" {
		return nil, fmt.Errorf("target: required, HOST:PORT of the ledger")
	}
	list := strings.Split(target, ",")
	for i, t := range list {
		list[i] = strings.TrimSpace(t)
		if list[i] == "" {
			return nil, fmt.Errorf("target: HOST:PORT, or several separated by commas (the nodes of a shard), "+
				"not %q", target)
		}
	}
	return list, nil
}

// followsAtOnce is how many follows in a row, with no batch accepted
// between them, go at once; later ones wait the back-off first, so that two
// nodes that name each other while a failover settles are not hammered.
const followsAtOnce = 3

// targets is where the Emitter sends next: the leader a node named, else
// the configured nodes in turn.
type targets struct {
	configured []string
	at         int
	followed   string
	follows    int
	mayDial    func(address string) bool // plain text off loopback is not, unless asked for
}

func (t *targets) current() string {
	if t.followed != "" {
		return t.followed
	}
	return t.configured[t.at]
}

// accepted: the current node took a batch.
func (t *targets) accepted() { t.follows = 0 }

// failed moves, after a batch or some of its receipts failed with code, to
// the leader the message names, or off a node that failed over (UNAVAILABLE
// or a deadline). True when the batch goes again at once (to the leader just
// named), false when it waits its back-off first.
func (t *targets) failed(code codes.Code, message string) bool {
	if leader := LeaderNamed(code, message); leader != "" && leader != t.current() && t.mayDial(leader) {
		t.followed = leader
		t.follows++
		return t.follows <= followsAtOnce
	}
	if code == codes.Unavailable || code == codes.DeadlineExceeded {
		if t.followed != "" {
			t.followed = "" // back to the configured node that named it
		} else {
			t.at = (t.at + 1) % len(t.configured)
		}
	}
	return false
}
