// Following the leader of a replicated shard. A node that follows refuses an
// append with UNAVAILABLE and names the leader ("... at leader=HOST:PORT
// (epoch E); send appends there", ledger/storage/replication/node.cc); the Emitter
// sends the batch there at once and keeps sending there. When the leader it
// follows fails it goes back to the nodes it was given, and on each failure
// moves on to the next of them.
//
// Thread-safety: none needed; Targets is the Emitter's sender's only.
import { status } from "@grpc/grpc-js";

/** The leader a follower's refusal names: the HOST:PORT after "leader=" in
 * an UNAVAILABLE message, up to a space, ';' or ')', as ledgerctl reads it
 * (cmd/ledgerctl.cc LeaderNamed); undefined for any other status. */
export function leaderNamed(code: status, message: string): string | undefined {
  if (code !== status.UNAVAILABLE) return undefined;
  const at = message.indexOf("leader=");
  if (at < 0) return undefined;
  const rest = message.slice(at + "leader=".length);
  const end = rest.search(/[ ;)]/);
  return (end < 0 ? rest : rest.slice(0, end)) || undefined;
}

/** The nodes `target` names: one HOST:PORT, an array of them, or a string of
 * them separated by commas (the nodes of a shard). TypeError when it names
 * none or has an empty one. */
export function parseTargets(target: string | readonly string[]): string[] {
  const list = (typeof target === "string" ? target.split(",") : [...target]).map((t) =>
    typeof t === "string" ? t.trim() : t);
  if (list.length === 0 || !list.every((t) => typeof t === "string" && t !== "")) {
    throw new TypeError("target: HOST:PORT, or several separated by commas (the nodes of a shard), not " +
                        JSON.stringify(target));
  }
  return list;
}

/** Follows in a row, with no batch accepted between them, sent at once;
 * later ones wait the back-off first, so that two nodes that name each other
 * while a failover settles are not hammered. */
const FOLLOWS_AT_ONCE = 3;

/** Where the Emitter sends next: the leader a node named, else the
 * configured nodes in turn. */
export class Targets {
  followed?: string;
  private at = 0;
  private follows = 0;

  /** `mayDial(address)`: whether a leader that a node names may be dialed
   * (plain text off loopback may not, unless asked for). */
  constructor(readonly configured: readonly string[],
              private readonly mayDial: (address: string) => boolean = () => true) {}

  get current(): string {
    return this.followed ?? this.configured[this.at];
  }

  /** The current node took a batch. */
  accepted(): void {
    this.follows = 0;
  }

  /** After a batch, or some of its receipts, failed with `code`: moves to the
   * leader the message names, or off a node that failed over (UNAVAILABLE or
   * a deadline). True when the batch goes again at once (to the leader just
   * named), false when it waits its back-off first. */
  failed(code: status, message: string): boolean {
    const leader = leaderNamed(code, message);
    if (leader !== undefined && leader !== this.current && this.mayDial(leader)) {
      this.followed = leader;
      return ++this.follows <= FOLLOWS_AT_ONCE;
    }
    if (code === status.UNAVAILABLE || code === status.DEADLINE_EXCEEDED) {
      if (this.followed !== undefined) {
        this.followed = undefined;  // back to the configured node that named it
      } else {
        this.at = (this.at + 1) % this.configured.length;
      }
    }
    return false;
  }
}
