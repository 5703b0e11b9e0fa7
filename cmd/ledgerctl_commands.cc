#include "cmd/ledgerctl_commands.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace ledger::ctl {
namespace {

using cmd::Flags;

// The flags of the commands. A flag that means one thing to one command and
// another to the next says all of it here, and each command's entry in the
// table says what it means there.
void DefineCommandFlags(Flags& flags) {
  flags.Define("origin", "evidence-ledger.local/dev",
               "keygen: the log's origin (the key name); audit, prove-run, prove-team: the name of "
               "<data>/signing.key");
  flags.Define("at-least", "0", "wait until the checkpoint covers N entries");
  flags.Define("format", "json", "json, or tlog-proof (c2sp.org/tlog-proof@v1 with the cosigned checkpoint)");
  flags.Define("cosignatures", "0", "wait until the checkpoint carries N witnesses' cosignatures");
  flags.Define("time-note", "", "print the checkpoint's signed time note instead of the checkpoint", true);
  flags.Define("timeout-ms", "30000", "how long to wait for --at-least and --cosignatures");
  flags.Define("seq", "", "prove, erase: the entry's seq; export: a range A:B");
  flags.Define("receipt-id", "", "the entry's receipt_id (with --team: receipt ids are unique per team)");
  flags.Define("size", "0", "tree size to prove against (0: the latest checkpoint)");
  flags.Define("from", "0", "consistency: old tree size; entries: first seq; export: RFC 3339 time");
  flags.Define("to", "0",
               "consistency: new tree size (0: latest checkpoint); entries: end seq (exclusive); "
               "export: RFC 3339 time");
  flags.Define("team", "", "the team (1-63 bytes of [a-z0-9-])");
  flags.Define("run", "", "the run_id; export: TEAM/RUN");
  flags.Define("state", "", "states, comma-separated (pending,succeeded,failed,denied,unknown)");
  flags.Define("anomaly", "", "anomalies, comma-separated (e.g. late_completion)");
  flags.Define("limit", "100", "at most this many, newest first");
  flags.Define("after-seq", "-1", "changes after this seq (-1: from the start)");
  flags.Define("json", "", "JSON instead of text", true);
  flags.Define("no-progress", "", "no progress line on stderr (shown only when stderr is a terminal)", true);
  flags.Define("data", "", "a stopped ledger's data directory");
  flags.Define("out", "",
               "export: the pack to write (.tar.gz); keygen: the key file; backup: a new directory under the "
               "server's --backup-root (absolute, or relative to it)");
  flags.Define("pkcs11", "",
               "keygen: an RFC 7512 URI (pkcs11:token=...;object=...?module-path=...&pin-source=file:...): make the "
               "key in that token");
  flags.Define("policy", "",
               "policy-check, verify: a C2SP tlog-policy file (logs, witnesses, quorum); verify: the ledger's key "
               "must be one of its logs (the key, when no --vkey is given) and the checkpoint's cosignatures must "
               "meet its quorum");
  flags.Define("vkey", "", "a file holding the ledger's verifier key line");
  flags.Define("allow-empty", "",
               "write the pack of a run or team window with no entry (it proves there is none); "
               "without it such an export fails, nothing written",
               true);
  flags.Define("pack-format", "9",
               "export: the pack format, 9 (format 7; 8 when the pack holds an erased entry; 9 for a run whose "
               "first entries were pruned), 8 (as 9, without format 9), 7 (report.html "
               "says which keys signed and what vouches for the time), 6 "
               "(the same pack for verifiers that predate format 7) or 5 (a path per entry, for verifiers that "
               "predate format 6)");
  flags.Define("since", "",
               "export, verify: a file holding an earlier signed checkpoint (verify: the pack must prove "
               "consistency from exactly it)");
  flags.Define("vkey-string", "", "the ledger's verifier key line itself");
  flags.Define("replay-state", "",
               "audit: a file to write the replay of a consistent store to (the format of a monitor's "
               "replay.state, to compare byte for byte)");
  flags.Define("key-set", "",
               "a file of the ledger's keys, each with the sizes it signs (CONTRACT section 5d): "
               "<vkey>[ from N][ until N] a line");
  flags.Define("key-history", "",
               "the ledger's key history (ledgerctl key-history), followed from --vkey or --key-set to the key of "
               "the pack's size");
  flags.Define("reason", "", "erase: why the entry is erased (recorded in the redaction entry)");
  flags.Define("new-key", "", "rotate-key: the new key (a key file's path or a PKCS#11 URI on the server's machine)");
  flags.Define("transition-sizes", "0",
               "rotate-key: checkpoints up to the rotation's seq + N also carry the old key's signature line");
  flags.Define("expect-scope", "",
               "the scope asked for (run:TEAM/RUN, seq:A:B, team:TEAM,FROM,TO with RFC 3339 times); "
               "a pack of another scope fails");
  flags.Define("not-older-than", "",
               "a tree size, or a file holding a signed checkpoint: a pack against an older checkpoint fails");
  flags.Define("trust-pack-key", "",
               "trust the key inside the pack (the result proves nothing about the ledger's identity)", true);
  flags.Define("expect-grace-ms", "",
               "the ledger's grace (ledgerd --unknown-grace-ms) the auditor expects: a pack whose manifest "
               "states another unknown_grace_ms fails");
  flags.Define("tsa-root", "",
               "verify: a file of PEM certificates: the checkpoint-time note must carry a time-stamp token of a TSA "
               "that chains to one of them (CONTRACT section 5e)");
  flags.Define("tsa-max-delay", "60", "verify: seconds a time-stamp may come after the note's time (with --tsa-root)");
  flags.Define(
      "report-by-digest", "",
      "check report.html of a pack of format 5 or earlier by its digest only, not rebuilt from the entries (for a "
      "pack written by an earlier version, whose page's words have changed since; the page is then only as good "
      "as the ledger's key)",
      true);
}

// Where commands go: the server, shards, TLS.
void DefineConnectionFlags(Flags& flags) {
  flags.Define("server", "127.0.0.1:7420", "ledger address HOST:PORT");
  flags.Define("shard-map", "",
               "a shard map (JSON, deploy/README.md): commands go to the team's shard (--team, --run TEAM/RUN) "
               "or to --shard N; append routes each receipt; steps without --team asks every shard");
  flags.Define("shard", "", "with --shard-map: the shard to ask (checkpoint, vkey, prove, entries, ...)");
  flags.Define("tls-ca", "", "TLS: CA certificates (PEM) the server's certificate must chain to");
  flags.Define("cert", "", "TLS: this client's certificate (PEM), its identity for the server");
  flags.Define("key", "", "TLS: this client's private key (PEM)");
  flags.Define("tls-server-name", "", "TLS: the name to check in the server's certificate (default: HOST)");
  flags.Define("insecure", "", "without --tls-ca: plain text to a --server or shard that is not a loopback address",
               true);
}

void DefineOtherFlags(Flags& flags) {
  flags.Define("config", "", "a JSON file of options: {\"option-name\": value, ...}; the command line wins");
  flags.Define("help", "", "print this help; with a command, that command's", true);
}

const std::vector<Command>* MakeCommands() {
  return new std::vector<Command>{
      {"keygen",
       "make a new signing key, in a file or a PKCS#11 token, and print its verifier key",
       {"--out FILE [--origin O]", "--pkcs11 URI --origin O"},
       false,
       {{"out", "the key file to write"},
        {"pkcs11", "an RFC 7512 URI: make the key in that token (never extractable), labelled with its object"},
        {"origin", "the log's origin, the key's name"}},
       {"ledgerctl keygen --origin ledger.example.com/prod --out signing.key",
        "ledgerctl keygen --origin ledger.example.com/prod --pkcs11 "
        "'pkcs11:token=ledger;object=ledger-prod?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/etc/"
        "ledger/pin'"}},
      {"append",
       "append receipts, one JSON object a line, from FILE or stdin; one result line each",
       {"[FILE|-]"},
       true,
       {},
       {"ledgerctl append receipts.jsonl", "ledgerctl --shard-map shards.json append receipts.jsonl"}},
      {"checkpoint",
       "print the latest signed checkpoint with its cosignatures",
       {"[--at-least N] [--cosignatures N] [--timeout-ms N] [--size S] [--time-note]"},
       true,
       {{"at-least", ""},
        {"cosignatures", ""},
        {"timeout-ms", ""},
        {"size", "the checkpoint of this tree size (0: the latest)"},
        {"time-note", ""}},
       {"ledgerctl checkpoint --at-least 1000 --timeout-ms 5000", "ledgerctl checkpoint --size 1000 --time-note"}},
      {"vkey", "print the ledger's verifier key line", {""}, true, {}, {"ledgerctl vkey"}},
      {"prove",
       "print an entry's inclusion proof",
       {"(--seq N | --team T --receipt-id ID) [--size S] [--format json|tlog-proof]"},
       true,
       {{"seq", "the entry's seq"},
        {"team", "the entry's team (with --receipt-id)"},
        {"receipt-id", ""},
        {"size", ""},
        {"format", ""}},
       {"ledgerctl prove --seq 42", "ledgerctl prove --team team-a --receipt-id s1-start --format tlog-proof"}},
      {"prove-run",
       "print a run's proof in the run-head map; with --data, from a stopped ledger's log",
       {"--team T --run R [--size S]", "--data DIR --origin O --size S --team T --run R"},
       true,
       {{"team", ""},
        {"run", ""},
        {"size", "the tree size to prove against (0: the latest checkpoint; with --data, a checkpoint's size)"},
        {"data", "replay the log of this stopped ledger's data directory instead of asking the server"},
        {"origin", "with --data: the name of <data>/signing.key"}},
       {"ledgerctl prove-run --team team-a --run run-1",
        "ledgerctl prove-run --data /var/lib/ledger --origin ledger.example.com/prod --size 1000 --team team-a "
        "--run run-1"}},
      {"prove-team",
       "print a team's head proof at a checkpoint, replayed from a stopped ledger's log",
       {"--data DIR --origin O --size S --team T"},
       false,
       {{"data", ""},
        {"origin", "the name of <data>/signing.key"},
        {"size", "the size of a checkpoint the ledger signed"},
        {"team", ""}},
       {"ledgerctl prove-team --data /var/lib/ledger --origin ledger.example.com/prod --size 1000 --team team-a"}},
      {"consistency",
       "print the consistency proof between two tree sizes",
       {"--from A [--to B]"},
       true,
       {{"from", "the old tree size"}, {"to", "the new tree size (0: the latest checkpoint)"}},
       {"ledgerctl consistency --from 100 --to 200"}},
      {"entries",
       "print the leaves A <= seq < B, their exact bytes",
       {"--from A --to B"},
       true,
       {{"from", "the first seq"}, {"to", "the end seq (exclusive)"}},
       {"ledgerctl entries --from 0 --to 10"}},
      {"steps",
       "list steps and their outcomes, newest first",
       {"[--team T] [--run R] [--state S,...] [--anomaly A,...] [--limit N] [--json]"},
       true,
       {{"team", "the team (without it: every team, with a TEAM column)"},
        {"run", ""},
        {"state", ""},
        {"anomaly", ""},
        {"limit", ""},
        {"json", "JSON lines instead of a table"}},
       {"ledgerctl steps --team team-a --state failed,unknown",
        "ledgerctl steps --team team-a --run run-1 --anomaly late_completion --json"}},
      {"run",
       "print a run's summary, its unknown steps named",
       {"--team T --run R [--json]"},
       true,
       {{"team", ""}, {"run", ""}, {"json", ""}},
       {"ledgerctl run --team team-a --run run-1"}},
      {"watch",
       "print step changes as JSON lines, the past then live",
       {"--team T [--run R] [--state S,...] [--anomaly A,...] [--after-seq N]"},
       true,
       {{"team", ""}, {"run", ""}, {"state", ""}, {"anomaly", ""}, {"after-seq", ""}},
       {"ledgerctl watch --team team-a --state failed,unknown"}},
      {"rebuild",
       "replay a stopped ledger's log into fresh projections",
       {"--data DIR"},
       false,
       {{"data", ""}},
       {"ledgerctl rebuild --data /var/lib/ledger"}},
      {"backup",
       "write a consistent copy of the store on the server's machine",
       {"--out DIR"},
       true,
       {{"out", "a new directory under the server's --backup-root (absolute, or relative to it)"}},
       {"ledgerctl backup --out nightly-1"}},
      {"rotate-key",
       "move the log to a new signing key: a key_rotation entry both keys sign (CONTRACT section 5d)",
       {"[--new-key SPEC] [--transition-sizes N]"},
       true,
       {{"new-key",
         "a key file's path or a PKCS#11 URI on the server's machine; without it a new key is made in the data "
         "directory (when the ledger's key is the data directory's own)"},
        {"transition-sizes", "checkpoints up to the rotation's seq + N also carry the old key's line (default 0)"}},
       {"ledgerctl rotate-key", "ledgerctl rotate-key --new-key 'pkcs11:token=ledger;object=key-2?module-path=...'"}},
      {"erase",
       "erase one entry's body, keeping its leaf hash and every proof (CONTRACT section 8): one admin asks, "
       "another approves with the same command",
       {"--seq S --reason TEXT"},
       true,
       {{"seq", "the entry to erase"},
        {"reason", "why, 1-1024 bytes; recorded with both admins' identities in the redaction entry"}},
       {"ledgerctl erase --seq 1234 --reason 'GDPR art. 17 request 881'"}},
      {"key-history",
       "write the log's key rotations with their inclusion proofs, for verifiers' --key-history",
       {"[--out FILE]"},
       true,
       {{"out", "the file to write (default: standard output)"}},
       {"ledgerctl key-history --out keys.json"}},
      {"replication",
       "print a replicated node's role, epoch, applied size and leader (on the leader, every node's lag)",
       {"[--json]"},
       true,
       {{"json", "one JSON object instead of text"}},
       {"ledgerctl replication --json"}},
      {"audit",
       "recompute all a stopped ledger stores and compare (exit 0 consistent, 1 not, 2 usage, 3 unreadable)",
       {"--data DIR [--vkey FILE | --origin O] [--replay-state FILE] [--json] [--no-progress]"},
       false,
       {{"data", ""},
        {"vkey", ""},
        {"origin", "without --vkey: the name of <data>/signing.key"},
        {"replay-state", ""},
        {"json", ""},
        {"no-progress", ""}},
       {"ledgerctl audit --data /var/lib/ledger --vkey ledger.vkey"}},
      {"export",
       "write the evidence pack of a run, a seq range or a team's time window",
       {"(--run TEAM/RUN | --seq A:B | --team T --from RFC3339 --to RFC3339)\n"
        "--out FILE [--since CHECKPOINT_FILE] [--allow-empty] [--pack-format 5|6|7|8|9] [--no-progress]"},
       true,
       {{"run", "the run, as TEAM/RUN"},
        {"seq", "the range of seqs A:B (A <= seq < B)"},
        {"team", "the team of a time window (with --from and --to)"},
        {"from", "the window's start, an RFC 3339 time"},
        {"to", "the window's end, an RFC 3339 time"},
        {"out", "the pack to write (.tar.gz)"},
        {"since", "a file holding an earlier signed checkpoint: the pack proves consistency from it"},
        {"allow-empty", ""},
        {"pack-format",
         "8 (the latest: format 7, or 8 when the pack holds an erased entry, CONTRACT section 8), 7 (for verifiers "
         "that predate format 8; refused for a pack that holds an erased entry), 6 (for verifiers that predate "
         "format 7: its report does not say which keys signed and "
         "what vouches for the time) or 5 (a path per entry, for verifiers that predate format 6)"},
        {"no-progress", ""}},
       {"ledgerctl export --run team-a/run-1 --out run-1.tar.gz",
        "ledgerctl export --team team-a --from 2026-01-01T00:00:00Z --to 2026-01-02T00:00:00Z --out day.tar.gz"}},
      {"verify",
       "check an evidence pack offline (exit 0 it holds, 1 it does not, 2 usage, 3 unreadable)",
       {"PACK (--vkey FILE | --vkey-string S | --key-set FILE | --trust-pack-key) [--key-history FILE]\n"
        "[--policy FILE] [--since CHECKPOINT_FILE] [--expect-scope run:TEAM/RUN|seq:A:B|team:TEAM,FROM,TO]\n"
        "[--not-older-than SIZE|CHECKPOINT_FILE] [--expect-grace-ms N] [--tsa-root FILE [--tsa-max-delay S]]\n"
        "[--report-by-digest] [--json] [--no-progress]"},
       false,
       {{"vkey", ""},
        {"vkey-string", ""},
        {"key-set", ""},
        {"key-history", ""},
        {"trust-pack-key", ""},
        {"policy",
         "a C2SP tlog-policy file: the ledger's key must be one of its logs (the key, when no --vkey is given) "
         "and the checkpoint's cosignatures must meet its quorum"},
        {"since", "a file holding an earlier signed checkpoint: the pack must prove consistency from exactly it"},
        {"expect-scope", ""},
        {"not-older-than", ""},
        {"expect-grace-ms", ""},
        {"tsa-root", ""},
        {"tsa-max-delay", ""},
        {"report-by-digest", ""},
        {"json", "the result as JSON"},
        {"no-progress", ""}},
       {"ledgerctl verify run-1.tar.gz --vkey ledger.vkey --expect-scope run:team-a/run-1"}},
      {"pack-proof",
       "verify an evidence pack, then print one entry's RFC 9162 inclusion proof derived from it alone",
       {"PACK --seq N (--vkey FILE | --vkey-string S | --trust-pack-key) [--policy FILE]\n"
        "[--format tlog-proof|json] [--no-progress]"},
       false,
       {{"seq", "the entry's seq (one of the pack's)"},
        {"vkey", ""},
        {"vkey-string", ""},
        {"trust-pack-key", ""},
        {"policy", "a C2SP tlog-policy file the pack's checkpoint must meet"},
        {"format",
         "tlog-proof (c2sp.org/tlog-proof@v1 with the pack's checkpoint; the default), or json "
         "({\"seq\",\"tree_size\",\"leaf_hash\",\"inclusion\"})"},
        {"no-progress", ""}},
       {"ledgerctl pack-proof run-1.tar.gz --seq 42 --vkey ledger.vkey --format tlog-proof > 42.proof"}},
      {"policy-check",
       "check a checkpoint against a tlog-policy: signed by one of its logs, cosigned by its quorum",
       {"--policy FILE [CHECKPOINT_FILE|-]"},
       false,
       {{"policy", "a C2SP tlog-policy file (logs, witnesses, quorum)"}},
       {"ledgerctl policy-check --policy witnesses.policy checkpoint.txt"}},
      {"retention-check",
       "read a retention policy as ledgerd --retention-policy does and print its rules (CONTRACT section 9)",
       {"FILE"},
       false,
       {},
       {"ledgerctl retention-check retention.policy"}},
      {"route",
       "print which shard of a shard map holds a team",
       {"--shard-map FILE --team T"},
       false,
       {{"shard-map", "the shard map (JSON, deploy/README.md)"}, {"team", ""}},
       {"ledgerctl --shard-map shards.json route --team team-a"}},
  };
}

// "ledgerctl NAME FORM" for each form of the synopsis, the first after
// "usage: ", a long one broken where it says, under its arguments.
std::string Synopsis(const Command& c) {
  std::string out;
  const std::string indent(std::string("usage: ledgerctl ").size() + c.name.size() + 1, ' ');
  for (const std::string& form : c.synopsis) {
    absl::StrAppend(&out, out.empty() ? "usage: " : "       ", "ledgerctl ", c.name, form.empty() ? "" : " ",
                    absl::StrReplaceAll(form, {{"\n", "\n" + indent}}), "\n");
  }
  return out;
}

std::vector<std::string> InGroup(const Flags& flags, const std::string& group) {
  std::vector<std::string> names;
  for (const std::string& name : flags.names()) {
    if (flags.GroupOf(name) == group) names.push_back(name);
  }
  return names;
}

}  // namespace

void DefineCtlFlags(Flags& flags) {
  flags.Group(kCommandOptions);
  DefineCommandFlags(flags);
  flags.Group(kConnectionOptions);
  DefineConnectionFlags(flags);
  flags.Group(kOtherOptions);
  DefineOtherFlags(flags);
  flags.Group("");
}

const std::vector<Command>& Commands() {
  static const std::vector<Command>* const kCommands = MakeCommands();
  return *kCommands;
}

const Command* FindCommand(const std::string& name) {
  for (const Command& c : Commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

absl::Status UnknownCommand(const std::string& name) {
  std::vector<std::string> names;
  for (const Command& c : Commands()) names.push_back(c.name);
  const std::string near = cmd::Nearest(name, names);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown command '", name, "'", near.empty() ? "" : absl::StrCat("; did you mean '", near, "'?")));
}

std::string Overview(const Flags& flags) {
  std::string out =
      "usage: ledgerctl [options] COMMAND [ARGS]\n"
      "       ledgerctl help COMMAND    (or ledgerctl COMMAND --help: what it reads, with examples)\n"
      "\nCommands:\n";
  size_t width = 0;
  for (const Command& c : Commands()) width = std::max(width, c.name.size());
  for (const Command& c : Commands()) {
    absl::StrAppend(&out, "  ", c.name, std::string(width + 2 - c.name.size(), ' '), c.summary, "\n");
  }
  absl::StrAppend(&out, "\n", flags.GroupUsage(kConnectionOptions), "\n", flags.GroupUsage(kOtherOptions));
  return out;
}

std::string CommandHelp(const Command& c, const Flags& flags) {
  std::string out = absl::StrCat("ledgerctl ", c.name, ": ", c.summary, "\n\n", Synopsis(c));
  if (!c.flags.empty()) {
    absl::StrAppend(&out, "\nOptions:\n");
    for (const CommandFlag& f : c.flags) absl::StrAppend(&out, flags.Usage(f.name, f.help));
  }
  if (c.connects) {
    std::vector<std::string> names = InGroup(flags, kConnectionOptions);
    for (std::string& name : names) name = "--" + name;
    absl::StrAppend(&out, "\n", kConnectionOptions, " (ledgerctl --help): ", absl::StrJoin(names, ", "), "\n");
  }
  absl::StrAppend(&out, c.examples.size() == 1 ? "\nExample:\n" : "\nExamples:\n");
  for (const std::string& e : c.examples) absl::StrAppend(&out, "  ", e, "\n");
  return out;
}

}  // namespace ledger::ctl
