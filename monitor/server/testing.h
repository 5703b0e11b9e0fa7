// For tests: a ledger's HTTP port as a monitor reads it (the latest time
// note and entry bundles of leaves held in memory). A fake for fault
// injection: its notes can be forged (signed with the log's own key) and
// its reads made to fail.
#ifndef MONITOR_SERVER_TESTING_H_
#define MONITOR_SERVER_TESTING_H_

#include <algorithm>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "ledger/format/note/note.h"
#include "ledger/format/replay/testing.h"
#include "ledger/format/retention/pruned.h"
#include "ledger/format/runmap/proof_json.h"
#include "monitor/server/monitor.h"
#include "nlohmann/json.hpp"
#include "util/http/client.h"

namespace ledger::monitor::testing {

inline constexpr char kOrigin[] = "example.org/log";

class FakeLog {
 public:
  FakeLog() : signer_(*note::Signer::Generate(kOrigin)) { leaves_.set_origin(kOrigin); }

  replay::testing::Leaves& leaves() { return leaves_; }
  note::Verifier key() const { return *note::Verifier::Parse(signer_.VerifierKey()); }
  std::string vkey() const { return signer_.VerifierKey(); }
  // Signs the note of the leaves so far (or `forged`) as the latest.
  void Checkpoint(std::optional<note::CheckpointTime> forged = std::nullopt) {
    note_ = *signer_.Sign(note::FormatCheckpointTime(forged.value_or(leaves_.Note())));
  }
  const std::string& note() const { return note_; }
  // Serves the paths of keys (/map/runs/<key>, /map/teams/<key>) from the
  // maps of `maps` (a forged ledger's, say), at the latest note's size.
  void ServeMaps(const replay::testing::Leaves& maps) {
    runs_ = maps.RunMap();
    teams_ = maps.TeamMap();
    serve_maps_ = true;
  }

  absl::StatusOr<http::Reply> Get(const std::string& url) {
    ++gets_;
    if (fail_after_ >= 0 && gets_ > fail_after_) return absl::UnavailableError("connect: refused");
    const std::string path = url.substr(std::string("http://log").size());
    if (path == "/checkpoint/time-note") return http::Reply{200, "text/plain", note_};
    if (path.starts_with("/map/")) return MapPath(path);
    for (uint64_t index = 0; index * 256 < leaves_.leaves().size(); ++index) {
      const uint64_t width = std::min<uint64_t>(256, leaves_.leaves().size() - index * 256);
      for (uint64_t w = 1; w <= width; ++w) {
        if (path != "/tlog/" + EntryBundlePath(index, w)) continue;
        std::string bundle;
        for (uint64_t i = index * 256; i < index * 256 + w; ++i) {
          const std::string leaf =
              i < pruned_below_ ? retention::PrunedLine(i, hash::LeafHash(leaves_.leaves()[i])) : leaves_.leaves()[i];
          bundle.push_back(static_cast<char>(leaf.size() >> 8));
          bundle.push_back(static_cast<char>(leaf.size() & 0xff));
          bundle += leaf;
        }
        ++bundles_;
        return http::Reply{200, "application/octet-stream", bundle};
      }
    }
    return http::Reply{404, "text/plain", "not found\n"};
  }

  absl::StatusOr<http::Reply> MapPath(const std::string& path) {
    const bool teams = path.starts_with("/map/teams/");
    auto key = hash::ParseHex(path.substr(teams ? 11 : 10));
    if (!serve_maps_ || !key.ok()) return http::Reply{404, "text/plain", "not found\n"};
    ++map_paths_;
    auto t = note::ParseCheckpointTime(note_.substr(0, note_.find("\n\n") + 1));
    auto proof = (teams ? teams_ : runs_).Prove(*key);
    nlohmann::json body = {{"tree_size", t->checkpoint.size},
                           {"time_note", note_},
                           {"proof", nlohmann::json::parse(runmap::EncodeProof({*key, *proof}))}};
    return http::Reply{200, "application/json", body.dump()};
  }

  int bundles_ = 0, gets_ = 0, fail_after_ = -1, map_paths_ = 0;
  uint64_t pruned_below_ = 0;  // entries below it served as pruned lines (CONTRACT section 9)

 private:
  note::Signer signer_;
  replay::testing::Leaves leaves_;
  std::string note_;
  bool serve_maps_ = false;
  runmap::RunMap runs_, teams_;
};

}  // namespace ledger::monitor::testing

#endif  // MONITOR_SERVER_TESTING_H_
